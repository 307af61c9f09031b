import { stringify as stringifyExact } from 'lossless-json'
import { INT64_MAX } from '../validation/int64.js'

// The nearest double to int64's maximum (2^63): what the document holds until it is written out.
const INT64_MAX_DOUBLE = Number(INT64_MAX)

/**
 * `value` with every int64 schema bounded by `maximum`, as the API bounds them (routes leave it out:
 * their validator checks the bound exactly, as bigint).
 */
export function boundInt64<T> (value: T): T {
  if (Array.isArray(value)) return value.map(boundInt64) as T
  if (typeof value !== 'object' || value === null) return value
  const node = Object.fromEntries(Object.entries(value).map(([key, child]) => [key, boundInt64(child)]))
  if (node.format === 'int64' && node.maximum === undefined) node.maximum = INT64_MAX_DOUBLE
  return node as T
}

/** The document as JSON text, with int64's maximum written exactly (JSON.stringify writes 9223372036854776000). */
export function stringifyDocument (document: unknown): string {
  return stringifyExact(document, undefined, undefined, [{ test: (value) => value === INT64_MAX_DOUBLE, stringify: () => INT64_MAX.toString() }])!
}
