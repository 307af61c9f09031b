import assert from 'node:assert/strict'
import { test } from 'node:test'
import { InvalidArgumentError } from 'commander'
import { parseInstant, replacementExpiryOf } from '../../src/cli/key-options.js'

test('--expires-at takes RFC 3339 as written, its T and Z in either case (section 5.6)', () => {
  const instant = Date.parse('2099-03-01T10:20:30Z')
  for (const text of ['2099-03-01T10:20:30Z', '2099-03-01t10:20:30z', '2099-03-01t12:20:30+02:00', '2099-03-01T10:20:30.000z']) {
    assert.equal(parseInstant(text).getTime(), instant, text)
  }
  for (const text of ['2099-03-01 10:20:30Z', '2099-03-01T10:20:30', '2099-02-30T10:20:30Z', '2099-03-01x10:20:30Z']) {
    assert.throws(() => parseInstant(text), /RFC 3339/, text)
  }
})

test('--expires-at past the last instant of year 9999 in UTC is refused: stored as +010000-..., it compared as already past', () => {
  assert.equal(parseInstant('9999-12-31T23:59:59+00:00').toISOString(), '9999-12-31T23:59:59.000Z')
  for (const text of ['9999-12-31T23:00:00-02:00', '9999-12-31T23:59:59-23:59']) {
    assert.throws(() => parseInstant(text), (error) => error instanceof InvalidArgumentError && error.message === 'a date and time no later than 9999-12-31T23:59:59Z', text)
  }
})

test('a replacement key lives as long as the key it replaces, as asked, or as a new key, and never past year 9999', () => {
  const now = Date.parse('2030-01-01T00:00:00Z')
  const day = 86_400_000
  assert.equal(replacementExpiryOf({}, undefined, now, 90 * day)?.getTime(), now + 90 * day)
  assert.equal(replacementExpiryOf({ expiresIn: day }, undefined, now, 90 * day)?.getTime(), now + day)
  assert.equal(replacementExpiryOf({}, '30d', now, undefined)?.getTime(), now + 30 * day)
  assert.equal(replacementExpiryOf({}, undefined, now, undefined), undefined)
  // A key made a year ago to end on 9999-12-31: its lifetime from now would end in year 10000.
  const lifetime = Date.parse('9999-12-31T23:59:59Z') - (now - 365 * day)
  assert.equal(replacementExpiryOf({}, undefined, now, lifetime)?.toISOString(), '9999-12-31T23:59:59.999Z')
})
