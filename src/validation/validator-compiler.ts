import { Ajv, type ErrorObject, type FuncKeywordDefinition } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'
import { INT64_MAX, isInt64Schema, toInt64 } from './int64.js'

type Format = (value: string) => boolean

/**
 * Builds Fastify's validator compiler: bodies are checked strictly (no coercion, no dropped fields),
 * query strings and path parameters are coerced from text. Both read int64 exactly.
 */
export function createValidatorCompiler (formats: Record<string, Format>): FastifySchemaCompiler<any> {
  const bodyAjv = createAjv({ coerceTypes: false, fromString: false, formats })
  const textAjv = createAjv({ coerceTypes: true, fromString: true, formats })
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : textAjv
    return ajv.compile(withInt64Keyword(schema as Record<string, unknown>))
  }
}

function createAjv ({ coerceTypes, fromString, formats }: { coerceTypes: boolean, fromString: boolean, formats: Record<string, Format> }): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: true })
  ajv.addKeyword(int64Keyword(fromString))
  for (const [name, validate] of Object.entries(formats)) ajv.addFormat(name, { type: 'string', validate })
  ajv.addVocabulary(['example', 'x-stability'])
  return ajv
}

/** Copies a schema, giving every int64 node to the `int64` keyword in place of `type` and its bounds. */
function withInt64Keyword (schema: unknown): any {
  if (Array.isArray(schema)) return schema.map(withInt64Keyword)
  if (schema === null || typeof schema !== 'object') return schema
  const node = schema as Record<string, unknown>
  if (isInt64Schema(node)) {
    const { type, format, minimum, maximum, ...rest } = node
    return { ...rest, int64: { minimum: String(minimum ?? -INT64_MAX - 1n), maximum: String(maximum ?? INT64_MAX) } }
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withInt64Keyword(value)]))
}

function int64Keyword (fromString: boolean): FuncKeywordDefinition {
  const validate: FuncKeywordDefinition['validate'] = function (bounds: { minimum: string, maximum: string }, data, _schema, context) {
    const value = toInt64(data, fromString)
    if (value === undefined || value < BigInt(bounds.minimum) || value > BigInt(bounds.maximum)) {
      (validate as { errors?: Partial<ErrorObject>[] }).errors = [{
        keyword: 'int64',
        message: `must be an integer from ${bounds.minimum} to ${bounds.maximum}`,
        params: bounds
      }]
      return false
    }
    // Handlers always see a bigint, whatever the JSON or text held.
    if (context?.parentData !== undefined) context.parentData[context.parentDataProperty] = value
    return true
  }
  return { keyword: 'int64', modifying: true, errors: true, schemaType: 'object', validate }
}
