import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createCursorCodec } from '../../src/pagination/cursor.js'
import { PET_STATUSES } from '../../src/pets/pet.schemas.js'

const codec = createCursorCodec('secret-one', 'pets', PET_STATUSES)

test('a cursor decodes to the id it was made from, for the same filter', () => {
  for (const id of [1n, 42n, 2n ** 53n + 1n, 2n ** 63n - 1n]) {
    assert.equal(codec.decode(codec.encode(id, undefined), undefined), id)
    assert.equal(codec.decode(codec.encode(id, 'sold'), 'sold'), id)
  }
})

test('a cursor is opaque and URL-safe', () => {
  const cursor = codec.encode(7n, 'available')
  assert.match(cursor, /^[A-Za-z0-9_-]+$/)
  assert.ok(!cursor.includes('7'), 'the id is not readable')
})

test('a cursor is refused for another filter, another secret, or any change', () => {
  const cursor = codec.encode(7n, 'available')
  assert.equal(codec.decode(cursor, undefined), undefined)
  assert.equal(codec.decode(cursor, 'pending'), undefined)
  assert.equal(createCursorCodec('secret-two', 'pets', PET_STATUSES).decode(cursor, 'available'), undefined)
  assert.equal(createCursorCodec('secret-one', 'orders', PET_STATUSES).decode(cursor, 'available'), undefined, 'another collection')
  for (let i = 0; i < cursor.length; i++) {
    const changed = cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1)
    assert.equal(codec.decode(changed, 'available'), undefined, `position ${i}`)
  }
  for (const junk of ['', 'x', cursor + 'A', cursor.slice(1), `${cursor}=`, `${cursor.slice(0, -1)}+`]) {
    assert.equal(codec.decode(junk, 'available'), undefined, junk)
  }
})
