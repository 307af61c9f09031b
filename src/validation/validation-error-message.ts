import type { FastifySchemaValidationError } from 'fastify'

const MAX_ECHOED_NAME = 64

/** Turns Ajv's first error into one sentence naming the field, e.g. "body.name must be a string". */
export function formatValidationErrors (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const error = errors[0]
  if (error === undefined) return new Error(`${dataVar} is invalid`)
  const path = dataVar + error.instancePath.replaceAll('/', '.')
  const params = error.params
  if (error.keyword === 'additionalProperties') {
    const name = String(params.additionalProperty).slice(0, MAX_ECHOED_NAME)
    return new Error(`${path} has an unknown property '${name}'`)
  }
  if (error.keyword === 'enum') {
    return new Error(`${path} must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`)
  }
  return new Error(`${path} ${error.message ?? 'is invalid'}`)
}
