import assert from 'node:assert/strict'
import { test } from 'node:test'
import { trimEnd } from '../../src/trim-end.js'

test('trimEnd removes the run of a character that ends a text, and only that', () => {
  assert.equal(trimEnd('/v1/pets///', '/'), '/v1/pets')
  assert.equal(trimEnd('localhost..', '.'), 'localhost')
  assert.equal(trimEnd('a.b', '.'), 'a.b')
  assert.equal(trimEnd('///', '/'), '')
  assert.equal(trimEnd('', '/'), '')
})

test('trimEnd takes time in proportion to the text, however the run of its character is placed', () => {
  // A run that does not end the text: /\/+$/ tries it from each of its positions (5 s for this text, once).
  const text = `${'/'.repeat(100_000)}x`
  const start = performance.now()
  for (let i = 0; i < 10; i++) assert.equal(trimEnd(text, '/'), text)
  assert.ok(performance.now() - start < 200, `${performance.now() - start} ms`)
})
