import assert from 'node:assert/strict'
import { test } from 'node:test'
import SqliteDatabase from 'better-sqlite3'
import { PetInsertQueue } from '../../src/pets/pet-insert-queue.js'
import { PetWriterThread } from '../../src/pets/pet-writer-thread.js'
import { build, createTestDb, defer } from '../helper.js'

const STRICT = { DURABILITY: 'strict' }

test('under DURABILITY=strict the event loop keeps serving while a create waits for the store', async (t) => {
  const testApp = await build(t, { env: STRICT })
  const origin = await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const other = new SqliteDatabase(testApp.config.DATABASE_URL.slice('sqlite:'.length))
  defer(t, () => other.close())
  other.exec('begin immediate') // another process holding the write lock past busy_timeout

  const finished: string[] = []
  const create = fetch(`${origin}/v1/pets`, {
    method: 'POST', headers: { ...testApp.auth, 'content-type': 'application/json' }, body: '{"name":"Waits","categoryId":1}'
  }).then((response) => { finished.push('create'); return response })
  await new Promise((resolve) => setTimeout(resolve, 50))
  const health = await fetch(`${origin}/healthz`)
  finished.push('healthz')
  const blocked = await create

  assert.equal(health.status, 200)
  // Committed on the event loop, the create would have held it through SQLite's busy wait.
  assert.deepEqual(finished, ['healthz', 'create'])
  assert.equal(blocked.status, 503)
  const body = await blocked.text()
  assert.equal(JSON.parse(body).code, 'service_unavailable')
  assert.doesNotMatch(body, /SQLITE|busy|locked/i)

  other.exec('commit')
  const resumed = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: 'After', categoryId: 1 } })
  assert.equal(resumed.statusCode, 201, resumed.body)
  const stored = await testApp.app.inject({ url: `/v1/pets/${resumed.json().id}`, headers: testApp.auth })
  assert.equal(stored.body, resumed.body, 'the pet is readable on the main connection as soon as it is answered')
})

test('the writer thread commits each group and answers each pet in the order sent, exact int64 included', async (t) => {
  const { db } = await createTestDb(t)
  const writer = PetWriterThread.start(db, { durability: 'strict' }, (error) => { throw error })!
  defer(t, () => writer.close())
  const sent = [
    { name: 'A', categoryId: 9_223_372_036_854_775_807n, status: 'sold' as const },
    { name: 'B', categoryId: 2n, status: 'available' as const },
    { name: 'A', categoryId: 9_223_372_036_854_775_807n, status: 'sold' as const }
  ]
  const pets = await writer.insert(sent)
  assert.deepEqual(pets.map(({ id, ...content }) => content), sent)
  const stored = await db.selectFrom('pets').select(['id', 'name', 'category_id as categoryId', 'status']).orderBy('id').execute()
  assert.deepEqual(stored, [...pets].sort((a, b) => Number(a.id - b.id)))
})

test('once the writer thread has stopped, creates are committed on the main connection', async (t) => {
  const { db } = await createTestDb(t)
  const writer = PetWriterThread.start(db, { durability: 'strict' }, (error) => { throw error })!
  await writer.close()
  assert.equal(writer.running, false)
  await assert.rejects(writer.insert([{ name: 'Lost', categoryId: 1n, status: 'available' }]), /stopped/)

  const queue = new PetInsertQueue(db, writer)
  const pet = await queue.insert({ name: 'Kept', categoryId: 1n, status: 'available' })
  const stored = await db.selectFrom('pets').select(['id', 'name']).execute()
  assert.deepEqual(stored, [{ id: pet.id, name: 'Kept' }])
})

test('an in-memory store has no writer thread: another connection could not see it', async (t) => {
  const { createDb } = await import('../../src/db/create-db.js')
  const db = createDb('sqlite::memory:')
  defer(t, () => db.destroy())
  assert.equal(PetWriterThread.start(db, { durability: 'strict' }, () => {}), undefined)
})
