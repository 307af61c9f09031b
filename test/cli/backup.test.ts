import assert from 'node:assert/strict'
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import SqliteDatabase from 'better-sqlite3'
import { sql } from 'kysely'
import { migrateToLatest } from '../../src/db/migrate.js'
import { createTestStore, openTestStore, tempDir } from '../helper.js'
import { runCli } from '../process.js'

const pet = { name: 'Rex', categoryId: 1n, status: 'available' as const }

test('backup copies the SQLite store while another process commits: every pet committed before it began, a copy that passes SQLite\'s check and opens as a store', async (t) => {
  const dir = tempDir(t)
  const { store, databaseUrl } = await createTestStore(t)
  const before = await store.pets.insertMany(Array.from({ length: 500 }, () => pet))
  let writing = true
  let written = 0
  const writes = (async () => {
    while (writing) {
      await store.pets.insertMany([pet])
      written++
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  const file = join(dir, 'backups', 'petstore.db')
  const backedUp = await runCli(['backup', file], { DATABASE_URL: databaseUrl })
  writing = false
  await writes
  assert.equal(backedUp.code, 0, backedUp.stderr)
  assert.ok(written > 0, 'the store was written to during the copy')
  const [, count] = /: (\d+) pets, as committed at one moment of the copy\.\n$/.exec(backedUp.stdout) ?? []
  assert.ok(Number(count) >= before.length, backedUp.stdout)
  assert.deepEqual(['petstore.db'], ['petstore.db.partial', 'petstore.db-wal', 'petstore.db'].filter((name) => existsSync(join(dir, 'backups', name))), 'the copy alone, renamed once whole')

  const copy = openTestStore(t, `sqlite:${file}`)
  const { newer } = await migrateToLatest(copy.db)
  assert.deepEqual(newer, [])
  const { rows: [check] } = await sql<{ quick_check: string }>`pragma quick_check`.execute(copy.db)
  assert.equal(check!.quick_check, 'ok')
  const ids = (await copy.db.selectFrom('pets').select('id').orderBy('id').execute()).map(({ id }) => BigInt(id))
  assert.equal(ids.length, Number(count))
  assert.deepEqual(ids.slice(0, before.length), before.map(({ id }) => id), 'every pet committed before the backup began')
})

test('backup of a file that is no store (not SQLite, empty, another application\'s database) is exit 2 naming it, and leaves no copy in the making to block the next backup', async (t) => {
  const dir = tempDir(t)
  writeFileSync(join(dir, 'text.db'), 'hello\n')
  writeFileSync(join(dir, 'empty.db'), '')
  const other = new SqliteDatabase(join(dir, 'other.db'))
  other.exec('create table notes (body text)')
  other.close()
  for (const [name, said] of [['text.db', 'file is not a database'], ['empty.db', 'it holds no pets table'], ['other.db', 'it holds no pets table']] as const) {
    const refused = await runCli(['backup', join(dir, 'copy.db')], { DATABASE_URL: `sqlite:${join(dir, name)}` })
    assert.equal(refused.code, 2, `${name}: ${refused.stderr}`)
    assert.equal(refused.stderr, `petstore: Cannot back up the SQLite store at ${join(dir, name)}: ${said}\n`)
    assert.ok(!existsSync(join(dir, 'copy.db.partial')) && !existsSync(join(dir, 'copy.db')), `${name}: nothing made`)
  }
  const { databaseUrl } = await createTestStore(t)
  const copied = await runCli(['backup', join(dir, 'copy.db')], { DATABASE_URL: databaseUrl })
  assert.equal(copied.code, 0, copied.stderr)
})

test('backup refuses, with exit code 2, a file that exists or is being made, a store that does not, sqlite::memory:, PostgreSQL, an empty name or one SQLite would trim, and a name of the store\'s own files', async (t) => {
  const dir = tempDir(t)
  const { databaseUrl } = await createTestStore(t)
  const taken = join(dir, 'taken.db')
  writeFileSync(taken, 'keep me')
  const leftBehind = join(dir, 'left.db.partial')
  writeFileSync(leftBehind, 'half a copy')
  const cases: Array<[string, string, RegExp]> = [
    [databaseUrl, taken, /taken\.db exists: a backup is written to a new file, never over one/],
    // Another backup's copy in the making, or one a stopped backup left: never written into.
    [databaseUrl, join(dir, 'left.db'), /left\.db\.partial exists: another backup to .*left\.db is running, or one stopped and left its copy; once none runs, remove it and back up again/],
    [`sqlite:${join(dir, 'none.db')}`, join(dir, 'copy.db'), /There is no store at .*none\.db \(DATABASE_URL\): nothing to back up/],
    ['sqlite::memory:', join(dir, 'copy.db'), /sqlite::memory:, a throw-away store .* there is nothing to back up/],
    ['postgres://petstore:secret@127.0.0.1:1/petstore', join(dir, 'copy.db'), /a PostgreSQL store: back it up with PostgreSQL's own tools \(pg_dump/],
    [databaseUrl, `${join(dir, 'copy.db')} `, /The file name ".*copy\.db " is empty, or begins or ends with white space: give one without/],
    [databaseUrl, '', /The file name "" is empty/],
    [databaseUrl, `${databaseUrl.slice('sqlite:'.length)}-journal`, /-journal is a name SQLite gives a file of the store itself: give the copy another/],
    // A folder that cannot be made: under /proc, Node's recursive mkdir went round for ever.
    [databaseUrl, '/proc/petstore-no-such-folder/copy.db', /Cannot make the folder \/proc\/petstore-no-such-folder for the copy: ENOENT/],
    [databaseUrl, join(taken, 'copy.db'), /Cannot make the folder .*taken\.db for the copy: .*taken\.db is a file, not a folder/]
  ]
  for (const [url, file, said] of cases) {
    const refused = await runCli(['backup', file], { DATABASE_URL: url })
    assert.equal(refused.code, 2, `${url}: ${refused.stderr}`)
    assert.match(refused.stderr, said)
  }
  // A link to no file passes for none, until the copy is to take its name.
  symlinkSync(join(dir, 'nowhere.db'), join(dir, 'dangling.db'))
  const dangling = await runCli(['backup', join(dir, 'dangling.db')], { DATABASE_URL: databaseUrl })
  assert.equal(dangling.code, 2, dangling.stderr)
  assert.match(dangling.stderr, /dangling\.db exists \(made during the copy, or a link to no file\): it was kept, and the copy left as .*dangling\.db\.partial/)
  assert.equal(readFileSync(taken, 'utf8'), 'keep me')
  assert.equal(readFileSync(leftBehind, 'utf8'), 'half a copy')
  assert.ok(!existsSync(join(dir, 'copy.db')) && !existsSync(join(dir, 'none.db')), 'nothing made')
})
