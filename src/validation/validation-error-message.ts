import type { FastifySchemaValidationError } from 'fastify'
import { cut, printable } from '../printable.js'
import { withoutSecrets } from '../without-secrets.js'

// A name is cut to this, after any key or secret in it is redacted (cut first, part of one would be left).
const MAX_ECHOED_NAME = 64

interface Part {
  /** The part as a whole, starting a sentence. */
  whole: string
  /** What one of its fields is called, singular and plural. */
  field: string
  fields: string
  /** Whether a sentence about one field says which part it is in: a body's fields need not. */
  namesPart: boolean
}

// Fastify names the parts of a request body, querystring, params and headers; the import validates rows.
const PARTS: Record<string, Part> = {
  body: { whole: 'The body', field: 'field', fields: 'fields', namesPart: false },
  querystring: { whole: 'The query string', field: 'query parameter', fields: 'query parameters', namesPart: true },
  params: { whole: 'The path', field: 'path parameter', fields: 'path parameters', namesPart: true },
  headers: { whole: 'The request', field: 'header', fields: 'headers', namesPart: true },
  row: { whole: 'The row', field: 'field', fields: 'fields', namesPart: false }
}

/**
 * Text without U+0000, which PostgreSQL cannot store, nor lone surrogates (in u-mode, as Ajv and JSON
 * Schema read patterns, `\ud800-\udfff` matches only those), which the stores changed into U+FFFD.
 */
export const WELL_FORMED_TEXT = '^[^\\u0000\\ud800-\\udfff]*$'

/** The schemas' patterns, in words (a test sends each). */
const PATTERN_RULES: Record<string, string> = {
  [WELL_FORMED_TEXT]: 'must be well-formed Unicode without U+0000',
  '^[\\x20-\\x7E]+$': 'must be printable ASCII characters (U+0020 to U+007E)'
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null'
}

/**
 * Turns Ajv's first error into one sentence that says what to fix, e.g. "`name` must be a string" or
 * "The body is missing the required fields `name` and `categoryId`": a missing field is reported with
 * every other required field that is missing too, so one request finds them all.
 */
export function formatValidationErrors (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const part = PARTS[dataVar] ?? { whole: `The ${dataVar}`, field: 'field', fields: 'fields', namesPart: false }
  const error = errors[0]
  if (error === undefined) return new Error(`${part.whole} is invalid`)
  // A query parameter given several times is a list to its schema (listEvents' `type`), never to the
  // client, who cannot send `type[1]`: each of its values is the parameter.
  const path = fieldPath(error.instancePath)
  const field = quote(part === PARTS.querystring ? path.replace(/\[\d+\]$/, '') : path)
  const subject = error.instancePath === '' ? part.whole : part.namesPart ? `${capitalized(part.field)} ${field}` : field
  return new Error(`${subject} ${predicate(error as FastifySchemaValidationError & VerboseError, part)}`)
}

/** What Ajv's `verbose` option adds to an error: the failing keyword's schema value and the data. */
interface VerboseError {
  schema?: unknown
  parentSchema?: { type?: unknown }
  data?: unknown
}

function predicate (error: FastifySchemaValidationError & VerboseError, part: Part): string {
  const { params } = error
  // A query parameter repeated (`?status=a&status=b`) is read as the list of its values, which only
  // some take (listEvents' `type`).
  if (part === PARTS.querystring && Array.isArray(error.data) && error.parentSchema?.type !== 'array') return `is given ${error.data.length} times: give it once`
  switch (error.keyword) {
    case 'required': {
      const present: Record<string, unknown> = error.data !== null && typeof error.data === 'object' ? error.data as Record<string, unknown> : {}
      const required = Array.isArray(error.schema) ? error.schema.map(String) : [String(params.missingProperty)]
      // As Ajv counts them: a field set to undefined (a CSV row's missing column) is missing.
      const missing = required.filter((name) => !Object.hasOwn(present, name) || present[name] === undefined)
      return `is missing the required ${missing.length === 1 ? part.field : part.fields} ${listOf(missing.map(quote))}`
    }
    case 'additionalProperties':
      return `has an unknown ${part.field} ${quote(printable(cut(withoutSecrets(String(params.additionalProperty)), MAX_ECHOED_NAME)))}`
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`
    case 'type':
      return `must be ${listOf(String(params.type).split(',').map((type) => TYPE_NAMES[type] ?? type), 'or')}`
    case 'minLength':
      return `must be at least ${String(params.limit)} ${params.limit === 1 ? 'character' : 'characters'} long`
    case 'maxLength':
      return `must be at most ${String(params.limit)} characters long`
    case 'minItems':
      return `must list at least ${counted(params.limit, 'item', 'items')}`
    case 'maxItems':
      return `must list at most ${counted(params.limit, 'item', 'items')}`
    case 'uniqueItems':
      return `must not list an item twice: items ${String(params.i)} and ${String(params.j)} are the same`
    case 'minProperties':
      return `must have at least ${counted(params.limit, part.field, part.fields)}`
    case 'pattern':
      return PATTERN_RULES[String(params.pattern)] ?? `must match the pattern ${String(params.pattern)}`
    default:
      return error.message ?? 'is invalid'
  }
}

/** "/owner/name" as `owner.name`, "/tags/0" as `tags[0]`. */
function fieldPath (instancePath: string): string {
  return instancePath.slice(1).split('/').map((step, i) => /^\d+$/.test(step) ? `[${step}]` : `${i === 0 ? '' : '.'}${step.replaceAll('~1', '/').replaceAll('~0', '~')}`).join('')
}

function counted (limit: unknown, one: string, many: string): string {
  return `${String(limit)} ${limit === 1 ? one : many}`
}

function capitalized (text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}

function quote (name: string): string {
  return `\`${name}\``
}

function listOf (items: string[], conjunction = 'and'): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} ${conjunction} ${items.at(-1)!}`
}
