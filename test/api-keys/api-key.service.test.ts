import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import { generateApiKey, hashApiKey, isWellFormedApiKey } from '../../src/api-keys/api-key.service.js'

test('a key is ps_, 32 random base62 characters and a 6-character checksum', () => {
  const { key, hash, hint } = generateApiKey()
  assert.match(key, /^ps_[0-9A-Za-z]{38}$/)
  assert.equal(hash, createHash('sha256').update(key).digest('hex'))
  assert.equal(hint, `ps_…${key.slice(-4)}`)
  assert.equal(isWellFormedApiKey(key), true)
})

test('keys do not repeat', () => {
  const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().key))
  assert.equal(keys.size, 1000)
})

test('a key with any character changed fails its checksum', () => {
  const { key } = generateApiKey()
  for (let i = 3; i < key.length; i++) {
    const changed = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1)
    assert.equal(isWellFormedApiKey(changed), false, `position ${i}`)
  }
  assert.equal(isWellFormedApiKey(`${key}x`), false)
  assert.equal(isWellFormedApiKey(key.replace('ps_', 'pk_')), false)
})

test('hashApiKey is SHA-256 in hex', () => {
  assert.equal(hashApiKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
})
