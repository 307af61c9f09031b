import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { sql } from 'kysely'
import { Pet } from '../../src/pets/pet.schemas.js'
import { SqliteConnection } from '../../src/store/sqlite/sqlite-connection.js'
import { dataVersionOf, walIndexOf } from '../../src/store/sqlite/sqlite-store.js'
import { apiValidatorCompiler } from '../../src/api-validator.js'
import { parseJsonBody } from '../../src/plugins/json-body.js'
import { build, clientFor, createPet, createTestStore, defer, forEachStore, openTestStore, tempDir, type TestStore } from '../helper.js'
import { runCli } from '../process.js'

// Reads of an unchanged SQLite store are answered from memory: every kind of write must be seen.
forEachStore((store) => {
  test('a page and a pet read before a write are read anew after it', async (t) => {
    const testApp = await build(t, { store })
    const client = await clientFor(testApp)
    const rex = await createPet(testApp, { name: 'Rex', categoryId: 1 })
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [rex])
    assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'available')

    // A create through group commit, then an order that changes the pet's status.
    const tom = await createPet(testApp, { name: 'Tom', categoryId: 1 })
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [rex, tom])
    assert.equal((await client.POST('/store/orders', { body: { petId: rex.id } })).response.status, 201)
    assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'pending')
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [tom])

    // A create with an Idempotency-Key, which also writes its record.
    const { data: kitty } = await client.POST('/pets', { body: { name: 'Kitty', categoryId: 2 }, params: { header: { 'idempotency-key': 'k-1' } } })
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [tom, kitty])
  })

  test('every body listPets, getPet, createPet and an idempotent replay send as stored text matches the response schema', async (t) => {
    const testApp = await build(t, { store })
    const validate = (schema: unknown) => apiValidatorCompiler({ schema: schema as object, method: 'GET', url: '/v1/pets', httpPart: 'body' })
    const isPet = validate(Pet)
    const check = (body: string, what: string) => {
      const value = parseJsonBody(body) // exact, as a client that reads int64 would
      for (const pet of Array.isArray(value) ? value : [value]) assert.equal(isPet(pet), true, `${what}: ${body}`)
    }
    const names = ['Rex', 'Zoë "the cat"', 'tab\tand\\backslash', '😺 emoji', '\u2028line']
    for (const [i, name] of names.entries()) {
      // Raw JSON text: categoryIds above 2^53 must arrive exact.
      const create = () => testApp.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...testApp.auth, 'idempotency-key': `k${i}`, 'content-type': 'application/json' },
        payload: `{"name":${JSON.stringify(name)},"categoryId":${9_223_372_036_854_775_800n + BigInt(i)},"status":"sold"}`
      })
      const response = await create()
      assert.equal(response.statusCode, 201, response.body)
      check(response.body, 'createPet')
      const replay = await create()
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      assert.equal(replay.body, response.body)
      const fetched = await testApp.app.inject({ url: `/v1/pets/${/"id":(\d+)/.exec(response.body)![1]}`, headers: testApp.auth })
      check(fetched.body, 'getPet')
      assert.equal(fetched.body, response.body)
    }
    for (const url of ['/v1/pets', '/v1/pets?status=sold&limit=2', '/v1/pets?status=available']) {
      const page = await testApp.app.inject({ url, headers: testApp.auth })
      assert.equal(page.statusCode, 200)
      check(page.body, `listPets ${url}`)
    }
  })
})

test('pets written by another process on the same SQLite file are seen at once', async (t) => {
  const testApp = await build(t)
  const client = await clientFor(testApp)
  const before = (await client.GET('/pets')).data!
  assert.deepEqual(before, [])
  const csv = join(tempDir(t), 'pets.csv')
  writeFileSync(csv, 'name,categoryId\nRex,1\nTom,2\n')
  const imported = await runCli(['pets', 'import', csv], { DATABASE_URL: testApp.config.DATABASE_URL })
  assert.equal(imported.code, 0, imported.stdout + imported.stderr)
  assert.deepEqual((await client.GET('/pets')).data!.map((pet) => pet.name), ['Rex', 'Tom'])
})

test('a pet and a page changed through another connection to the same file are read anew', async (t) => {
  const testApp = await build(t)
  const client = await clientFor(testApp)
  const rex = await createPet(testApp, { name: 'Rex', categoryId: 1 })
  assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'available')
  assert.deepEqual((await client.GET('/pets')).data, [rex])

  const { db: other } = openTestStore(t, testApp.config.DATABASE_URL)
  await other.updateTable('pets').set({ status: 'sold' }).where('id', '=', BigInt(rex.id)).execute()
  assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'sold')
  assert.deepEqual((await client.GET('/pets')).data, [{ ...rex, status: 'sold' }])
  // A schema change is a commit too: the table swapped for an empty copy.
  await sql`alter table pets rename to pets_before`.execute(other)
  await sql`create table pets as select * from pets_before where false`.execute(other)
  assert.deepEqual((await client.GET('/pets')).data, [])
})

test('the reads of a turn look at the store once, at its end: a change committed in the turn after they were asked for is seen by them', async (t) => {
  const { store, databaseUrl } = await createTestStore(t)
  const created = await store.pets.create({ pet: { name: 'Rex', categoryId: 1n, status: 'available' } })
  assert.ok(created.outcome === 'created')
  const { id } = created.pet
  assert.match((await store.pets.findById(id))!, /"available"/)
  const other = new SqliteConnection(databaseUrl.slice('sqlite:'.length), 'default')
  defer(t, () => { other.close() })

  const reads = [store.pets.findById(id), store.pets.findPage({ status: undefined, limit: 10 })] as const
  other.query('update pets set status = ? where id = ?', ['sold', id])
  const [pet, page] = await Promise.all(reads)
  assert.match(pet!, /"sold"/)
  assert.match(page.json, /"sold"/)
})

test('an in-memory store reads every write anew', async (t) => {
  const inMemory: TestStore = { name: 'sqlite', databaseUrl: async () => 'sqlite::memory:' }
  const testApp = await build(t, { store: inMemory })
  const client = await clientFor(testApp)
  const rex = await createPet(testApp, { name: 'Rex', categoryId: 1 })
  assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [rex])
  const tom = await createPet(testApp, { name: 'Tom', categoryId: 2 })
  assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [rex, tom])
  assert.equal((await client.POST('/store/orders', { body: { petId: rex.id } })).response.status, 201)
  assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'pending')
  assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [tom])
})

test('a read while a transaction is open on the writing connection neither waits for it nor sees its uncommitted rows', async (t) => {
  const { store } = await createTestStore(t)
  let read: string | undefined = 'not read'
  await assert.rejects(store.db.transaction().execute(async (trx) => {
    const { id } = await trx.insertInto('pets').values({ name: 'Ghost', category_id: 1n, status: 'available', created_at: '' }).returning('id').executeTakeFirstOrThrow()
    read = await store.pets.findById(id)
    throw new Error('roll back')
  }), /roll back/)
  assert.equal(read, undefined)
  const created = await store.pets.create({ pet: { name: 'Rex', categoryId: 1n, status: 'available' } })
  assert.equal(created.outcome, 'created')
  assert.match((await store.pets.findById(created.pet.id))!, /"name":"Rex"/)
})

test('the read cache uses the WAL index only where it can be trusted, and SQLite\'s data_version elsewhere', async (t) => {
  const path = join(tempDir(t), 'store.db')
  const writer = new SqliteConnection(path, 'default')
  defer(t, () => writer.close())
  writer.query('create table t (x)')

  const shared = new SqliteConnection(path, 'default', { queryOnly: true })
  defer(t, () => shared.close())
  const walIndex = walIndexOf(shared)
  assert.ok(walIndex, 'WAL mode with normal locking and a -shm file')
  defer(t, () => walIndex.close())

  // With exclusive locking SQLite keeps the WAL index in its own memory: the -shm file would not change.
  const exclusive = new SqliteConnection(join(tempDir(t), 'exclusive.db'), 'default', { queryOnly: true })
  defer(t, () => exclusive.close())
  exclusive.setting('locking_mode = EXCLUSIVE')
  assert.equal(walIndexOf(exclusive), undefined)

  // The fallback sees a commit of another connection at once, and a schema change.
  const version = dataVersionOf(shared)
  const before = version()
  writer.query('insert into t values (1)')
  const afterInsert = version()
  assert.notEqual(afterInsert, before)
  assert.equal(version(), afterInsert, 'unchanged without a commit')
  writer.query('create table u (y)')
  assert.notEqual(version(), afterInsert)
})
