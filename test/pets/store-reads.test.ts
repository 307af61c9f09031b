import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { sql } from 'kysely'
import { createDb } from '../../src/db/create-db.js'
import { findPetJsonById, insertPet } from '../../src/pets/pet.repository.js'
import { build, clientFor, createPet, createTestDb, defer, forEachStore, tempDir, type TestStore } from '../helper.js'
import { runCli } from '../process.js'

// Reads of an unchanged SQLite store are answered from memory: every kind of write must be seen.
forEachStore((store) => {
  test('a page and a pet read before a write are read anew after it', async (t) => {
    const testApp = await build(t, { store })
    const client = await clientFor(testApp)
    const rex = await createPet(testApp, { name: 'Rex', categoryId: 1 })
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [rex])
    assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'available')

    // A create through the group-commit path, then an order that changes the pet's status.
    const tom = await createPet(testApp, { name: 'Tom', categoryId: 1 })
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [rex, tom])
    assert.equal((await client.POST('/store/orders', { body: { petId: rex.id } })).response.status, 201)
    assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'pending')
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [tom])

    // A create with an Idempotency-Key takes another path to the store.
    const { data: kitty } = await client.POST('/pets', { body: { name: 'Kitty', categoryId: 2 }, params: { header: { 'idempotency-key': 'k-1' } } })
    assert.deepEqual((await client.GET('/pets', { params: { query: { status: 'available' } } })).data, [tom, kitty])
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

  const other = createDb(testApp.config.DATABASE_URL)
  defer(t, () => other.destroy())
  await other.updateTable('pets').set({ status: 'sold' }).where('id', '=', BigInt(rex.id)).execute()
  assert.equal((await client.GET('/pets/{petId}', { params: { path: { petId: rex.id } } })).data!.status, 'sold')
  assert.deepEqual((await client.GET('/pets')).data, [{ ...rex, status: 'sold' }])
  // A schema change is a commit too: the table swapped for an empty copy.
  await sql`alter table pets rename to pets_before`.execute(other)
  await sql`create table pets as select * from pets_before where false`.execute(other)
  assert.deepEqual((await client.GET('/pets')).data, [])
})

test('an in-memory store, which has no WAL index, still reads every write anew', async (t) => {
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

test('a read while a transaction is open on the SQLite connection does not see its uncommitted rows', async (t) => {
  const { db } = await createTestDb(t)
  let read: Promise<string | undefined> | undefined
  let id = 0n
  await assert.rejects(db.transaction().execute(async (trx) => {
    id = (await insertPet(trx, { name: 'Ghost', categoryId: 1n, status: 'available' })).id
    read = findPetJsonById(db, id)
    throw new Error('roll back')
  }), /roll back/)
  assert.equal(await read, undefined)
  const committed = await insertPet(db, { name: 'Rex', categoryId: 1n, status: 'available' })
  assert.match((await findPetJsonById(db, committed.id))!, /"name":"Rex"/)
})
