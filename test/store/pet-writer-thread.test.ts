import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import SqliteDatabase from 'better-sqlite3'
import { Kysely, sql } from 'kysely'
import { systemClock } from '../../src/clock.js'
import type { Database } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import type { PetCreated } from '../../src/store/pet-store.js'
import { PetWriterThread } from '../../src/store/sqlite/pet-writer-thread.js'
import { SqliteConnection } from '../../src/store/sqlite/sqlite-connection.js'
import { MultiProcessSqliteDialect } from '../../src/store/sqlite/sqlite-dialect.js'
import { SqlitePetStore } from '../../src/store/sqlite/sqlite-pet-store.js'
import { build, createKey, createTestStore, defer, openTestStore } from '../helper.js'

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
  assert.equal(stored.body, resumed.body, 'the pet is readable as soon as it is answered')
})

test('the writer thread commits each group and answers each create in the order sent, exact int64 included', async (t) => {
  const { db, databaseUrl } = await createTestStore(t)
  const writer = new PetWriterThread({ path: databaseUrl.slice('sqlite:'.length), durability: 'strict', autocheckpointPages: 1000 }, (error) => { throw error })
  defer(t, () => writer.close())
  const sent = [
    { name: 'A', categoryId: 9_223_372_036_854_775_807n, status: 'sold' as const },
    { name: 'B', categoryId: 2n, status: 'available' as const },
    { name: 'A', categoryId: 9_223_372_036_854_775_807n, status: 'sold' as const }
  ]
  const created = await writer.commit(sent.map((pet) => ({ pet })), new Date().toISOString())
  const pets = created.map((outcome) => outcome.outcome === 'created' ? outcome.pet : assert.fail('not created'))
  assert.deepEqual(pets.map(({ id, ...content }) => content), sent)
  const stored = await db.selectFrom('pets').select(['id', 'name', 'category_id as categoryId', 'status']).orderBy('id').execute()
  assert.deepEqual(stored, [...pets].sort((a, b) => Number(a.id - b.id)))
})

// The thread is sent a group as one JSON text and answers with the first id and the replays alone
// (src/store/sqlite/writer-wire.ts): what the event loop makes of that must be what a commit on its own
// connection answers.
test('through the writer thread, idempotent creates and replays are answered as on the main connection, any text and int64 kept', async (t) => {
  const { db, databaseUrl } = await createTestStore(t)
  const writer = new PetWriterThread({ path: databaseUrl.slice('sqlite:'.length), durability: 'strict', autocheckpointPages: 1000 }, (error) => { throw error })
  defer(t, () => writer.close())
  const { id: apiKeyId } = await createKey(db)
  const claim = (key: string) => ({ apiKeyId, key, requestHash: `hash of ${key}`, locationPrefix: '/v1/pets/', notBefore: '2000-01-01T00:00:00.000Z' })
  const pet = (name: string) => ({ name, categoryId: 9_223_372_036_854_775_807n, status: 'pending' as const })
  const creates = [
    { pet: pet('"Quoted" \\ back\nslash') },
    { pet: pet('Ünïcødé 🐕'), idempotency: claim('K1') },
    { pet: pet('Again'), idempotency: claim('K1') },
    { pet: pet('Lone \ud800 surrogate'), idempotency: claim('K2 "quoted"') }
  ]
  const outcomes = await writer.commit(creates, new Date().toISOString())
  assert.deepEqual(outcomes.map(({ outcome }) => outcome), ['created', 'created', 'replayed', 'created'])
  const [first, second, replay, fourth] = outcomes as [PetCreated & { outcome: 'created' }, PetCreated & { outcome: 'created' }, PetCreated, PetCreated & { outcome: 'created' }]
  assert.deepEqual([second.pet.id, fourth.pet.id], [first.pet.id + 1n, first.pet.id + 2n], 'a replay takes no id')
  assert.deepEqual([first, second, fourth].map(({ pet: { id, ...content } }) => content), [0, 1, 3].map((i) => creates[i]!.pet))
  assert.equal(first.response, undefined)
  assert.deepEqual(replay, { outcome: 'replayed', response: second.response })
  assert.deepEqual(second.response, {
    requestHash: 'hash of K1', status: 201, body: `{"id":${second.pet.id},"name":"Ünïcødé 🐕","categoryId":9223372036854775807,"status":"pending"}`, location: `/v1/pets/${second.pet.id}`
  })
  const stored = await db.selectFrom('idempotency_keys').select(['key', 'response_body as body', 'location']).orderBy('key').execute()
  assert.deepEqual(stored, [second.response!, fourth.response!].map(({ body, location }, i) => ({ key: ['K1', 'K2 "quoted"'][i], body, location })))
})

test('groups sent to the writer thread one after the other, without waiting, are each answered with their own pets', { timeout: 10_000 }, async (t) => {
  const { db, databaseUrl } = await createTestStore(t)
  const writer = new PetWriterThread({ path: databaseUrl.slice('sqlite:'.length), durability: 'strict', autocheckpointPages: 1000 }, (error) => { throw error })
  defer(t, () => writer.close())
  const groups = [['A', 'B'], ['C'], ['D', 'E', 'F']]
  const answers = await Promise.all(groups.map((names) => writer.commit(names.map((name) => ({ pet: { name, categoryId: 1n, status: 'available' } })), new Date().toISOString())))
  const pets = answers.map((created) => created.map((outcome) => outcome.outcome === 'created' ? outcome.pet : assert.fail('not created')))
  assert.deepEqual(pets.map((group) => group.map(({ name }) => name)), groups)
  const stored = await db.selectFrom('pets').select(['id', 'name']).orderBy('id').execute()
  assert.deepEqual(stored, pets.flat().map(({ id, name }) => ({ id, name })))
})

test('the writer thread answers every group sent before it is told to stop', { timeout: 10_000 }, async (t) => {
  const { db, databaseUrl } = await createTestStore(t)
  const writer = new PetWriterThread({ path: databaseUrl.slice('sqlite:'.length), durability: 'strict', autocheckpointPages: 1000 }, (error) => { throw error })
  const answers = ['A', 'B', 'C'].map((name) => writer.commit([{ pet: { name, categoryId: 1n, status: 'available' } }], new Date().toISOString()))
  await writer.close()
  const pets = (await Promise.all(answers)).flat().map((outcome) => outcome.outcome === 'created' ? outcome.pet.name : assert.fail('not created'))
  assert.deepEqual(pets, ['A', 'B', 'C'])
  assert.deepEqual((await db.selectFrom('pets').select('name').orderBy('id').execute()).map(({ name }) => name), pets)
})

test('when a commit on the writer thread fails for the store, the groups queued meanwhile fail with it at once', { timeout: 10_000 }, async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const path = databaseUrl.slice('sqlite:'.length)
  const writer = new PetWriterThread({ path, durability: 'strict', autocheckpointPages: 1000 }, (error) => { throw error })
  defer(t, () => writer.close())
  const other = new SqliteDatabase(path)
  defer(t, () => other.close())
  const create = () => writer.commit([{ pet: { name: 'Waits', categoryId: 1n, status: 'available' } }], new Date().toISOString())
  await create() // the thread started and ready
  other.exec('begin immediate') // held past the writer's busy timeout (500 ms)
  const started = performance.now()
  const first = create()
  await new Promise((resolve) => setTimeout(resolve, 50)) // the first group waiting for the lock
  const queued = create()
  const outcomes = await Promise.allSettled([first, queued])
  const waitedMs = performance.now() - started
  other.exec('rollback')
  assert.deepEqual(outcomes.map((outcome) => outcome.status === 'rejected' && (outcome.reason as { code?: string }).code), ['SQLITE_BUSY', 'SQLITE_BUSY'])
  assert.ok(waitedMs < 900, `one busy wait, not one a group: ${Math.round(waitedMs)} ms`)
})

test('under DURABILITY=strict, concurrent creates are each answered with their own pet, readable at once', async (t) => {
  const testApp = await build(t, { env: STRICT })
  const origin = await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const names = Array.from({ length: 50 }, (_, i) => `Concurrent ${i}`)
  const created = await Promise.all(names.map(async (name) => {
    const response = await fetch(`${origin}/v1/pets`, { method: 'POST', headers: { ...testApp.auth, 'content-type': 'application/json' }, body: JSON.stringify({ name, categoryId: 1 }) })
    return { status: response.status, body: await response.text() }
  }))
  assert.deepEqual(created.map(({ status, body }) => [status, JSON.parse(body).name]), names.map((name) => [201, name]))
  assert.equal(new Set(created.map(({ body }) => JSON.parse(body).id)).size, names.length)
  for (const { body } of created) {
    const stored = await fetch(`${origin}/v1/pets/${JSON.parse(body).id}`, { headers: testApp.auth })
    assert.equal(await stored.text(), body)
  }
})

test('once the writer thread has stopped, creates are committed on the main connection', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const path = databaseUrl.slice('sqlite:'.length)
  const writerThread = new PetWriterThread({ path, durability: 'strict', autocheckpointPages: 1000 }, (error) => { throw error })
  await writerThread.close()
  assert.equal(writerThread.running, false)
  await assert.rejects(writerThread.commit([{ pet: { name: 'Lost', categoryId: 1n, status: 'available' } }], ''), /stopped/)

  const writer = new SqliteConnection(path, 'strict')
  const reader = new SqliteConnection(path, 'strict', { queryOnly: true })
  const db = new Kysely<Database>({ dialect: new MultiProcessSqliteDialect({ database: writer.forKysely() }) })
  defer(t, async () => { await db.destroy(); reader.close(); writer.close() })
  const pets = new SqlitePetStore({ db, writer, reader, writerThread, commitVersion: () => String(Math.random()), clock: systemClock })
  const created = await pets.create({ pet: { name: 'Kept', categoryId: 1n, status: 'available' } })
  assert.equal(created.outcome, 'created')
  assert.match((await pets.findPage({ status: undefined, limit: 10 })).json, /"name":"Kept"/)
})

test('a :memory: store is a throw-away file: it works as a file store, under strict durability too, and is removed on close', async (t) => {
  const store = openTestStore(t, 'sqlite::memory:', { durability: 'strict' })
  await migrateToLatest(store.db)
  const created = await store.pets.create({ pet: { name: 'Rex', categoryId: 1n, status: 'available' } })
  assert.equal(created.outcome, 'created')
  assert.match((await store.pets.findPage({ status: 'available', limit: 10 })).json, /"name":"Rex"/)
  const { rows: [main] } = await sql<{ file: string }>`pragma database_list`.execute(store.db)
  assert.ok(existsSync(main!.file), main!.file)
  await store.close()
  assert.equal(existsSync(main!.file), false)
})
