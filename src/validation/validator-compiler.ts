import { Ajv, type ErrorObject, type FuncKeywordDefinition, type ValidateFunction } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'
import { compiledOnFirstUse } from './compiled-on-first-use.js'
import { INT64_MAX, isInt64Schema, toInt64 } from './int64.js'
import { oncePerSchema } from './once-per-schema.js'

/** A custom string format: its check, and what a valid value is, for error messages ("must be ..."). */
export interface StringFormat {
  validate: (value: string) => boolean
  rule: string
}

/**
 * Builds Fastify's validator compiler. Nothing is coerced or dropped: bodies are checked as JSON
 * holds them, and integers in query strings and paths must be plain decimal text (Ajv's coercion
 * would take "0x10", "1e1" or " 5"). int64 values are read exactly, as bigint.
 */
export function createValidatorCompiler (formats: Record<string, StringFormat>): FastifySchemaCompiler<any> {
  const compilerFor = (fromText: boolean) => {
    const ajv = createAjv(fromText, formats)
    return oncePerSchema((schema) => compiledOnFirstUse(schema, (copy) => withFormatRules(ajv.compile(withIntegerKeyword(copy, fromText)), formats)))
  }
  const fromBody = compilerFor(false)
  const fromText = compilerFor(true)
  return ({ schema, httpPart }) => httpPart === 'body' ? fromBody(schema) : fromText(schema)
}

/**
 * The validator, with the messages of a field that has a custom format (its "must match format", and
 * those of the standard keywords that say part of the same rule, such as `pattern`) replaced by the
 * format's rule.
 */
function withFormatRules (validate: ValidateFunction, formats: Record<string, StringFormat>) {
  const withRules = (data: unknown): boolean => {
    const valid = validate(data)
    withRules.errors = valid ? undefined : validate.errors?.map((error) => {
      const format = (error.parentSchema as { format?: unknown } | undefined)?.format
      const rule = typeof format === 'string' ? formats[format]?.rule : undefined
      // Reported as the format's error whichever of its keywords failed, as the rule says the whole of
      // it; a value of another type is told its type.
      return rule === undefined || error.keyword === 'type' ? error : { ...error, keyword: 'format', message: rule }
    })
    return valid
  }
  withRules.errors = undefined as ErrorObject[] | undefined
  return withRules
}

function createAjv (fromString: boolean, formats: Record<string, StringFormat>): Ajv {
  // No check of each schema against JSON Schema's meta-schema: that compiled the meta-schema in every
  // Ajv instance, a fifth of the start-up. The schemas are fixed in the code, and the tests check them
  // (test/validation/schemas.test.ts); strict mode still refuses any unknown keyword at compile time.
  // verbose: errors name their schema, whose format (if any) gives the message (see withFormatRules).
  const ajv = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false, strict: true, validateSchema: false, verbose: true })
  ajv.addKeyword(exactIntegerKeyword(fromString))
  for (const [name, { validate }] of Object.entries(formats)) ajv.addFormat(name, { type: 'string', validate })
  ajv.addVocabulary(['example', 'x-stability'])
  return ajv
}

interface IntegerBounds {
  minimum: string
  maximum: string
  /** int64 values are handed on as bigint, others as number. */
  bigint: boolean
}

/**
 * Copies a schema, giving integer nodes to the `exactInteger` keyword in place of `type` and its bounds:
 * the int64 ones everywhere, and all of them in text (query strings, paths).
 */
function withIntegerKeyword (schema: unknown, allIntegers: boolean): any {
  if (Array.isArray(schema)) return schema.map((item) => withIntegerKeyword(item, allIntegers))
  if (schema === null || typeof schema !== 'object') return schema
  const node = schema as Record<string, unknown>
  const bigint = isInt64Schema(node)
  if (bigint || (allIntegers && node.type === 'integer')) {
    const { type, format, minimum, maximum, ...rest } = node
    const bounds: IntegerBounds = { minimum: String(minimum ?? -INT64_MAX - 1n), maximum: String(maximum ?? INT64_MAX), bigint }
    return { ...rest, exactInteger: bounds }
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withIntegerKeyword(value, allIntegers)]))
}

function exactIntegerKeyword (fromString: boolean): FuncKeywordDefinition {
  const validate: FuncKeywordDefinition['validate'] = function (bounds: IntegerBounds, data, _schema, context) {
    const value = toInt64(data, fromString)
    if (value === undefined || value < BigInt(bounds.minimum) || value > BigInt(bounds.maximum)) {
      (validate as { errors?: Partial<ErrorObject>[] }).errors = [{
        keyword: 'exactInteger',
        message: `must be an integer from ${bounds.minimum} to ${bounds.maximum}`,
        params: { minimum: bounds.minimum, maximum: bounds.maximum }
      }]
      return false
    }
    // Handlers see a bigint (int64) or a number, whatever the JSON or text held.
    if (context?.parentData !== undefined) context.parentData[context.parentDataProperty] = bounds.bigint ? value : Number(value)
    return true
  }
  return { keyword: 'exactInteger', modifying: true, errors: true, schemaType: 'object', validate }
}
