import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseInstant } from '../../src/cli/key-options.js'

test('--expires-at takes RFC 3339 as written, its T and Z in either case (section 5.6)', () => {
  const instant = Date.parse('2099-03-01T10:20:30Z')
  for (const text of ['2099-03-01T10:20:30Z', '2099-03-01t10:20:30z', '2099-03-01t12:20:30+02:00', '2099-03-01T10:20:30.000z']) {
    assert.equal(parseInstant(text).getTime(), instant, text)
  }
  for (const text of ['2099-03-01 10:20:30Z', '2099-03-01T10:20:30', '2099-02-30T10:20:30Z', '2099-03-01x10:20:30Z']) {
    assert.throws(() => parseInstant(text), /RFC 3339/, text)
  }
})
