import { LosslessNumber } from 'lossless-json'

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
// Past 20 digits no value fits an int64, so a larger power of ten need not be written out.
const MAX_SCALE = 20

/**
 * A JSON number as its exact decimal value decides: an integer (a number, or a BigInt past 2^53)
 * when the text is one, whatever its form (`1.0` and `1e2` are 1 and 100); otherwise a number, or,
 * when rounding to a double would make an integer of it (`1.00000000000000001`), the LosslessNumber
 * itself, so that no integer field takes it for one.
 */
export function parseExactNumber (text: string): number | bigint | LosslessNumber {
  const integer = exactInteger(text)
  if (integer !== undefined) return Number.isSafeInteger(Number(integer)) ? Number(integer) : integer
  const value = Number(text)
  return Number.isInteger(value) ? new LosslessNumber(text) : value
}

/** The integer the decimal text stands for exactly; undefined for a fraction or a value past any int64. */
function exactInteger (text: string): bigint | undefined {
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = DECIMAL.exec(text) ?? []
  if (whole === '') return undefined
  const digits = `${whole}${fraction}`
  // The value is digits × 10^scale.
  const scale = Number(exponent) - fraction.length
  if (scale >= 0) return /^0+$/.test(digits) ? 0n : scale > MAX_SCALE ? undefined : BigInt(`${sign}${digits}${'0'.repeat(scale)}`)
  const kept = digits.length + scale
  if (/[^0]/.test(kept <= 0 ? digits : digits.slice(kept))) return undefined
  return kept <= 0 ? 0n : BigInt(`${sign}${digits.slice(0, kept)}`)
}
