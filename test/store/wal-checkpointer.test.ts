import assert from 'node:assert/strict'
import { copyFileSync, existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import SqliteDatabase from 'better-sqlite3'
import { migrateToLatest } from '../../src/db/migrate.js'
import { openStore } from '../../src/store/open-store.js'
import { WAL_SIZE_LIMIT_BYTES } from '../../src/store/sqlite/sqlite-connection.js'
import { build, tempDir, waitFor } from '../helper.js'

/** The pets in the database file itself, as a copy of it without its WAL shows. */
function petsInDatabaseFile (path: string, copy: string): number {
  copyFileSync(path, copy)
  const sqlite = new SqliteDatabase(copy, { readonly: true })
  try {
    return Number(sqlite.prepare('select count(*) as n from pets').pluck().get())
  } catch {
    return 0 // not even the schema has reached the file
  } finally {
    sqlite.close()
  }
}

for (const durability of ['default', 'strict']) {
  test(`DURABILITY=${durability}: the WAL is checkpointed into the database file by the checkpoint thread, not left to the commits`, async (t) => {
    const testApp = await build(t, { env: { DURABILITY: durability }, storeOptions: { checkpointStartDelayMs: 0 } })
    const path = testApp.config.DATABASE_URL.slice('sqlite:'.length)
    const copy = join(tempDir(t), 'copy.db')
    for (let i = 0; i < 20; i++) {
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: `Pet ${i}`, categoryId: 1 } })
      assert.equal(response.statusCode, 201)
    }
    // Twenty small commits are far from the 1,000 WAL pages at which a commit would checkpoint.
    await waitFor(() => petsInDatabaseFile(path, copy) === 20, () => `${petsInDatabaseFile(path, copy)} pets of 20 in the database file`, { everyMs: 50 })
  })
}

/** Long enough for a store to open, migrate and close on a loaded machine; half the time a thread then has to start. */
const UNCHECKPOINTED_START_DELAY_MS = 400

// SQLite removes the WAL when its last connection closes: one left open by the thread would keep it.
test('closing the store ends the checkpoint thread with its connection, and closed before the thread started leaves nothing either', async (t) => {
  const closedStores: Array<{ path: string, checkpointed: boolean }> = []
  const firstOpened = performance.now()
  for (const checkpointed of [false, true]) {
    const path = join(tempDir(t), 'petstore.db')
    // The first store is closed long before its thread's start; the second waits for a checkpoint.
    const store = openStore(`sqlite:${path}`, { checkpointStartDelayMs: checkpointed ? 0 : UNCHECKPOINTED_START_DELAY_MS })
    await migrateToLatest(store.db)
    const deadline = Date.now() + 5000
    while (checkpointed && petsInDatabaseFile(path, `${path}.copy`) === 0 && Date.now() < deadline) {
      await store.db.insertInto('pets').values({ name: 'Rex', category_id: 1n, status: 'available', created_at: new Date().toISOString() }).execute()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await store.close()
    closedStores.push({ path, checkpointed })
  }
  // Asked past the start delay of the first store: a thread started after its close would have opened it again.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstOpened + 2 * UNCHECKPOINTED_START_DELAY_MS - performance.now())))
  for (const { path, checkpointed } of closedStores) {
    assert.equal(existsSync(`${path}-wal`), false, checkpointed ? 'closed after a checkpoint' : 'closed before the thread started')
  }
})

// SQLite keeps the WAL file at its largest: one grown to the commits' 40 MB threshold while a webhook
// backlog was delivered kept those 40 MB on disk until the service stopped.
test('a WAL grown past WAL_SIZE_LIMIT_BYTES while the checkpoint could not keep up is cut back to it once checkpointed', async (t) => {
  const path = join(tempDir(t), 'petstore.db')
  const store = openStore(`sqlite:${path}`, { checkpointStartDelayMs: 0 })
  t.after(() => store.close())
  await migrateToLatest(store.db)
  const insertPets = (count: number, name: string) => store.db.insertInto('pets')
    .values(Array.from({ length: count }, () => ({ name, category_id: 1n, status: 'available' as const, created_at: new Date().toISOString() }))).execute()
  // A reader in a transaction keeps the checkpoint from copying what was written after it began.
  const reader = new SqliteDatabase(path)
  t.after(() => reader.close())
  reader.exec('begin')
  reader.prepare('select count(*) from pets').get()
  for (let i = 0; i < 60; i++) await insertPets(10, 'x'.repeat(10_000))
  assert.ok(statSync(`${path}-wal`).size > WAL_SIZE_LIMIT_BYTES, 'the WAL grew past the limit')

  reader.exec('commit')
  const deadline = Date.now() + 5000
  // The WAL starts over on the first commit after a checkpoint that copied all of it.
  while (statSync(`${path}-wal`).size > WAL_SIZE_LIMIT_BYTES && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    await insertPets(1, 'Rex')
  }
  assert.ok(statSync(`${path}-wal`).size <= WAL_SIZE_LIMIT_BYTES, `the WAL is ${statSync(`${path}-wal`).size} bytes`)
})
