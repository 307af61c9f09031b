import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isValidPetName } from '../../src/pets/pet-name.js'

test('a name has 1 to 100 characters once trimmed', () => {
  assert.equal(isValidPetName('R'), true)
  assert.equal(isValidPetName('x'.repeat(100)), true)
  assert.equal(isValidPetName('x'.repeat(101)), false)
  assert.equal(isValidPetName(` \t${'x'.repeat(100)}\n `), true)
  assert.equal(isValidPetName(''), false)
  assert.equal(isValidPetName(' \t\n\u00a0\u2003'), false)
})

test('whitespace is every Unicode White_Space character, U+0085 (NEL) too, which String.prototype.trim keeps', () => {
  assert.equal(isValidPetName('\u0085'), false)
  assert.equal(isValidPetName(' \u0085\u3000\ufeff'), false)
  assert.equal(isValidPetName(`\u0085${'x'.repeat(100)}\u0085`), true)
  assert.equal(isValidPetName('a\u0085b'), true)
})

test('characters are code points, so astral characters count once', () => {
  assert.equal(isValidPetName('🐕'.repeat(100)), true)
  assert.equal(isValidPetName('🐕'.repeat(101)), false)
})

test('lone surrogates and NUL are refused', () => {
  assert.equal(isValidPetName('a\ud800'), false)
  assert.equal(isValidPetName('\udc00b'), false)
  assert.equal(isValidPetName('a\u0000b'), false)
})
