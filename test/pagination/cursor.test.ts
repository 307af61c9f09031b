import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCursorCodec } from '../../src/pagination/cursor.js'
import { PET_STATUSES } from '../../src/pets/pet.schemas.js'

const codec = createCursorCodec('secret-one', 'pets', PET_STATUSES)

test('a cursor decodes to the id it was made from, for the same filter', () => {
  for (const id of [1n, 42n, 2n ** 53n + 1n, 2n ** 63n - 1n]) {
    assert.equal(codec.decode(codec.encode(id, {}), {}), id)
    assert.equal(codec.decode(codec.encode(id, { status: 'sold' }), { status: 'sold' }), id)
    assert.equal(codec.decode(codec.encode(id, { status: 'sold', categoryId: 3n }), { status: 'sold', categoryId: 3n }), id)
  }
})

test('a cursor is opaque and URL-safe', () => {
  const cursor = codec.encode(7n, { status: 'available' })
  assert.match(cursor, /^[A-Za-z0-9_-]+$/)
  assert.ok(!cursor.includes('7'), 'the id is not readable')
})

test('a cursor is refused for another filter, another secret, or any change', () => {
  const cursor = codec.encode(7n, { status: 'available' })
  assert.equal(codec.decode(cursor, {}), undefined)
  assert.equal(codec.decode(cursor, { status: 'pending' }), undefined)
  assert.equal(createCursorCodec('secret-two', 'pets', PET_STATUSES).decode(cursor, { status: 'available' }), undefined)
  assert.equal(createCursorCodec('secret-one', 'orders', PET_STATUSES).decode(cursor, { status: 'available' }), undefined, 'another collection')
  for (let i = 0; i < cursor.length; i++) {
    const changed = cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1)
    assert.equal(codec.decode(changed, { status: 'available' }), undefined, `position ${i}`)
  }
  for (const junk of ['', 'x', cursor + 'A', cursor.slice(1), `${cursor}=`, `${cursor.slice(0, -1)}+`]) {
    assert.equal(codec.decode(junk, { status: 'available' }), undefined, junk)
  }
})

test('a cursor made for a category is refused for another category or none, and one made for none for any category', () => {
  const inCategory = codec.encode(7n, { categoryId: 3n })
  assert.equal(codec.decode(inCategory, { categoryId: 4n }), undefined)
  assert.equal(codec.decode(inCategory, {}), undefined)
  assert.equal(codec.decode(codec.encode(7n, {}), { categoryId: 3n }), undefined)
  assert.equal(codec.decode(inCategory, { categoryId: 3n, status: 'available' }), undefined)
})

test('cursors made before the category filter existed still hold', () => {
  // Made by the codec of 23 November 2026 (version 1, no category): links clients hold across the upgrade keep working.
  assert.equal(codec.decode('AQEAAAAAAAAAB-qb3LikCvNfnYweAA', { status: 'available' }), 7n)
})
