import assert from 'node:assert/strict'
import { test } from 'node:test'
import { LosslessNumber } from 'lossless-json'
import { parseExactNumber } from '../../src/validation/exact-number.js'

test('a JSON number is an integer exactly when its decimal value is one, whatever its form', () => {
  for (const [text, value] of [['1', 1], ['1.0', 1], ['1e2', 100], ['1E+2', 100], ['2.50e1', 25], ['-3.000', -3], ['0.0e5', 0], ['1200e-2', 12]] as const) {
    assert.equal(parseExactNumber(text), value, text)
  }
  assert.equal(parseExactNumber('9223372036854775807.0'), 9_223_372_036_854_775_807n)
  assert.equal(parseExactNumber('9007199254740993'), 9_007_199_254_740_993n)
})

test('a fraction stays a fraction, even where a double would round it to an integer', () => {
  assert.equal(parseExactNumber('1.5'), 1.5)
  assert.equal(parseExactNumber('1e-2'), 0.01)
  for (const text of ['1.00000000000000001', '4503599627370496.5', '12.0000000000000000000000001']) {
    assert.ok(parseExactNumber(text) instanceof LosslessNumber, text)
  }
})

test('exponents past any int64 are not written out, and give no integer', () => {
  assert.equal(parseExactNumber('1e999999999'), Infinity)
  assert.ok(parseExactNumber('1e21') instanceof LosslessNumber)
})
