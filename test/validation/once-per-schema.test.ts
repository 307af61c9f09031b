import assert from 'node:assert/strict'
import { test } from 'node:test'
import { oncePerSchema } from '../../src/validation/once-per-schema.js'

test('a schema is compiled once per content: an equal copy gets the same result, another schema its own', () => {
  const compiled: unknown[] = []
  const compile = oncePerSchema((schema) => {
    compiled.push(schema)
    return { schema }
  })
  const id = { type: 'object', properties: { id: { type: 'integer' } } }
  const first = compile(id)
  assert.equal(compile(structuredClone(id)), first)
  const other = compile({ type: 'object', properties: { id: { type: 'string' } } })
  assert.notEqual(other, first)
  assert.equal(compiled.length, 2)
})
