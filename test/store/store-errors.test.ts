import assert from 'node:assert/strict'
import { openSync, writeSync, closeSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import SqliteDatabase from 'better-sqlite3'
import { isStoreUnavailable } from '../../src/store/store-errors.js'
import { tempDir } from '../helper.js'

/** The error SQLite gives `read` on the file at `path`. */
function errorOf (path: string, read: (db: SqliteDatabase.Database) => unknown): unknown {
  const db = new SqliteDatabase(path)
  try {
    read(db)
  } catch (error) {
    return error
  } finally {
    db.close()
  }
  assert.fail('the read succeeded')
}

test('a SQLite store that is damaged (a page overwritten) or is no database is a store fault (503, logged), not a bug (500)', (t) => {
  const dir = tempDir(t)
  const damaged = join(dir, 'damaged.db')
  const db = new SqliteDatabase(damaged)
  db.exec('create table t (id integer primary key, v text); create index t_v on t (v)')
  const insert = db.prepare('insert into t (v) values (?)')
  for (let i = 0; i < 2000; i++) insert.run(`value ${i} ${'x'.repeat(50)}`)
  db.close()
  // Pages after the first two (the schema's) overwritten with bytes that make no page.
  const file = openSync(damaged, 'r+')
  writeSync(file, Buffer.alloc(4096 * 8, 0x5a), 0, 4096 * 8, 4096 * 2)
  closeSync(file)
  const corrupt = errorOf(damaged, (damagedDb) => damagedDb.prepare('select count(*) from t where v > ?').get('value'))
  assert.match(String((corrupt as { code?: string }).code), /^SQLITE_CORRUPT/)
  assert.equal(isStoreUnavailable(corrupt), true)

  const notDatabase = join(dir, 'not-a-database.db')
  writeFileSync(notDatabase, Buffer.alloc(8192, 0x5a))
  const notadb = errorOf(notDatabase, (notDb) => notDb.prepare('select 1 from sqlite_schema').get())
  assert.equal((notadb as { code?: string }).code, 'SQLITE_NOTADB')
  assert.equal(isStoreUnavailable(notadb), true)
})
