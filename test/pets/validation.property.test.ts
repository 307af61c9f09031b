import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { isValidPetName, NAME_PATTERN } from '../../src/pets/pet-name.js'
import { build } from '../helper.js'

const INT64_MAX = 2n ** 63n - 1n

/** The rule as the issue states it, written the plain way. */
function referenceNameRule (name: string): boolean {
  // Unicode's White_Space: trim()'s, and U+0085 (NEL), which trim() keeps.
  const trimmed = name.replace(/^[\s\u0085]+|[\s\u0085]+$/g, '')
  return name.isWellFormed() && !name.includes('\0') && [...trimmed].length >= 1 && [...trimmed].length <= 100
}

const nameCharacter = fc.oneof(
  fc.constantFrom(' ', '\t', '\n', '\u0085', '\u00a0', '\u2003', '\ufeff', '\u0000', '\ud800', '\udc00', '🐕', 'é', 'x'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })
)

test('pet names: the validator agrees with the stated rule on any string', () => {
  fc.assert(fc.property(fc.string({ unit: nameCharacter, maxLength: 230, size: 'max' }), (name) => {
    assert.equal(isValidPetName(name), referenceNameRule(name), JSON.stringify(name))
  }), { numRuns: 2000 })
})

test("pet names: the schema's pattern, for validators that do not know the format, agrees with the rule too, with the u flag or without", () => {
  const withU = new RegExp(NAME_PATTERN, 'u')
  const withoutU = new RegExp(NAME_PATTERN)
  fc.assert(fc.property(fc.string({ unit: nameCharacter, maxLength: 230, size: 'max' }), (name) => {
    assert.equal(withU.test(name), referenceNameRule(name), JSON.stringify(name))
    assert.equal(withoutU.test(name), referenceNameRule(name), JSON.stringify(name))
  }), { numRuns: 2000 })
})

test('categoryId over HTTP: 201 and an exact round trip iff 1 <= n <= 2^63-1, else 400', async (t) => {
  const testApp = await build(t, { env: { RATE_LIMIT_PER_MINUTE: '0' } })
  await fc.assert(fc.asyncProperty(fc.bigInt(-(2n ** 65n), 2n ** 65n), async (categoryId) => {
    const response = await testApp.app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: { ...testApp.auth, 'content-type': 'application/json' },
      payload: `{"name":"Prop","categoryId":${categoryId}}`
    })
    const valid = categoryId >= 1n && categoryId <= INT64_MAX
    assert.equal(response.statusCode, valid ? 201 : 400, `${categoryId}: ${response.body}`)
    if (valid) assert.match(response.body, new RegExp(`"categoryId":${categoryId}[,}]`))
  }), { numRuns: 300 })
})

test('limit: 200 iff plain decimal digits with a value of 1 to 100, else 400', async (t) => {
  const testApp = await build(t, { env: { RATE_LIMIT_PER_MINUTE: '0' } })
  const limitText = fc.oneof(fc.string({ maxLength: 6 }), fc.integer({ min: -5, max: 150 }).map(String), fc.constantFrom('007', '1e1', '0x10', ' 5', '+5', '5.0'))
  await fc.assert(fc.asyncProperty(limitText, async (limit) => {
    const response = await testApp.app.inject({ url: `/v1/pets?limit=${encodeURIComponent(limit)}`, headers: testApp.auth })
    const valid = /^\d{1,20}$/.test(limit) && Number(limit) >= 1 && Number(limit) <= 100
    assert.equal(response.statusCode, valid ? 200 : 400, JSON.stringify(limit))
  }), { numRuns: 500 })
})
