import { Type } from 'typebox'

const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

interface Int64Options {
  minimum?: number
  description?: string
  examples?: unknown[]
}

/**
 * A JSON integer of the int64 range, exact beyond 2^53 and typed as bigint.
 * Ajv's `integer` cannot check a BigInt, so the validator compiler hands these to its `exactInteger` keyword.
 */
export function Int64 (options: Int64Options = {}) {
  return Type.Unsafe<bigint>({ type: 'integer', format: 'int64', ...options })
}

/** True for a schema node built by `Int64`. */
export function isInt64Schema (schema: Record<string, unknown>): boolean {
  return schema.type === 'integer' && schema.format === 'int64'
}

// Leading zeros, however many, then at most 19 digits (int64's): BigInt never makes a number of
// thousands of digits from a long text (a path parameter may be up to 8 KiB), and zeros add nothing
// to it. The first digit after the zeros is not one, so that `0*` has one way to match: with `0*\d`,
// the 8 KiB of zeros that end in a letter took 330 µs to refuse, against 17 µs.
const DECIMAL_INTEGER = /^-?(?:0*[1-9]\d{0,18}|0+)$/

/**
 * Reads an int64 from a parsed JSON value (a number or, past 2^53, a BigInt) or, when `fromString`
 * is set (query strings and path parameters), from decimal text; undefined when it is not one.
 */
export function toInt64 (value: unknown, fromString: boolean): bigint | undefined {
  let result: bigint
  if (typeof value === 'bigint') result = value
  else if (typeof value === 'number' && Number.isSafeInteger(value)) result = BigInt(value)
  else if (fromString && typeof value === 'string' && DECIMAL_INTEGER.test(value)) result = BigInt(value)
  else return undefined
  return result >= INT64_MIN && result <= INT64_MAX ? result : undefined
}
