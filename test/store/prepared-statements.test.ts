import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { migrateToLatest } from '../../src/db/migrate.js'
import { openStore } from '../../src/store/open-store.js'
import { preparedStatements } from '../../src/store/postgres/prepared-statements.js'
import type { StoreLog } from '../../src/store/store.js'
import { defer, TEST_STORES } from '../helper.js'

// The server itself, not a pooler in front of it (CI's second run sets TEST_DATABASE_URL to PgBouncer's).
const DIRECT_URL = process.env.TEST_DATABASE_DIRECT_URL ?? process.env.TEST_DATABASE_URL

/** One connection to the server, so that what a statement left on it can be looked at. */
function oneConnection (t: TestContext, connectionString: string): pg.Pool {
  const pool = new pg.Pool({ connectionString, max: 1 })
  defer(t, () => pool.end())
  return pool
}

function recordingLog (): StoreLog & { warnings: string[] } {
  const warnings: string[] = []
  return { warnings, info: () => {}, warn: (_details, message) => { warnings.push(message) }, error: () => {} }
}

const PREPARED = "select count(*)::int as count from pg_prepared_statements where name like 'petstore\\_%'"

if (DIRECT_URL !== undefined) {
  test('on a direct connection the hot statements are prepared once, under a name made from their text', async (t) => {
    const pool = oneConnection(t, DIRECT_URL)
    const query = preparedStatements(async () => pool, { named: true, log: recordingLog() })
    const text = 'select $1::int as value'
    for (const value of [1, 2, 3]) assert.deepEqual(await query(text, [value]), [{ value }])
    assert.deepEqual(await query('select $1::text as text', ['a']), [{ text: 'a' }])
    assert.deepEqual((await pool.query(PREPARED)).rows, [{ count: 2 }])
    const { rows: [prepared] } = await pool.query('select statement, generic_plans + custom_plans as runs from pg_prepared_statements where name = $1',
      [`petstore_${createHash('sha256').update(text).digest('hex').slice(0, 40)}`])
    assert.deepEqual(prepared, { statement: text, runs: '3' })
  })

  test('where DATABASE_URL is said to be a pooler, no statement is named', async (t) => {
    const pool = oneConnection(t, DIRECT_URL)
    const query = preparedStatements(async () => pool, { named: false, log: recordingLog() })
    assert.deepEqual(await query('select $1::int as value', [7]), [{ value: 7 }])
    assert.deepEqual((await pool.query(PREPARED)).rows, [{ count: 0 }])
  })

  test('a server connection without the statement, as behind a pooler, turns the names off for good and the statement is answered unnamed', async (t) => {
    const pool = oneConnection(t, DIRECT_URL)
    const log = recordingLog()
    const query = preparedStatements(async () => pool, { named: true, log })
    assert.deepEqual(await query('select $1::int as value', [1]), [{ value: 1 }])
    // What a pooler does: the next statement reaches a server connection that never saw the first.
    await pool.query('deallocate all')
    assert.deepEqual(await query('select $1::int as value', [2]), [{ value: 2 }])
    assert.deepEqual(await query('select $1::int as value', [3]), [{ value: 3 }])
    assert.deepEqual((await pool.query(PREPARED)).rows, [{ count: 0 }])
    assert.equal(log.warnings.length, 1)
    assert.match(log.warnings[0]!, /pooler/)
  })

  test('a statement whose result a schema change altered since it was prepared is answered unnamed, not failed', async (t) => {
    const pool = oneConnection(t, DIRECT_URL)
    const log = recordingLog()
    const query = preparedStatements(async () => pool, { named: true, log })
    const table = `prepared_test_${randomBytes(6).toString('hex')}`
    await pool.query(`create table ${table} (a int)`)
    defer(t, async () => { await pool.query(`drop table ${table}`) })
    await pool.query(`insert into ${table} values (1)`)
    assert.deepEqual(await query(`select * from ${table} where a = $1`, [1]), [{ a: 1 }])
    await pool.query(`alter table ${table} add column b int`)
    assert.deepEqual(await query(`select * from ${table} where a = $1`, [1]), [{ a: 1, b: null }])
    assert.equal(log.warnings.length, 1)
  })
}

// Through PgBouncer in transaction mode (CI's second run: Debian's 1.18, which keeps no prepared
// statements) with no DATABASE_DIRECT_URL to say so: the store finds out by itself, once, and no
// create or read fails for it.
const pooler = TEST_STORES.find(({ name }) => name === 'postgres')
if (process.env.TEST_DATABASE_DIRECT_URL !== undefined && pooler !== undefined) {
  test('behind PgBouncer without DATABASE_DIRECT_URL, creates and reads on many connections all succeed', async (t) => {
    const log = recordingLog()
    const store = openStore(await pooler.databaseUrl(t), { poolSize: 8, log })
    defer(t, () => store.close())
    await migrateToLatest(store.db)
    const created = await Promise.all(Array.from({ length: 200 }, async (_, i) => await store.pets.create({ pet: { name: `Pet ${i}`, categoryId: 1n, status: 'available' } })))
    const ids = created.map((result) => result.outcome === 'created' ? result.pet.id : undefined)
    assert.equal(new Set(ids).size, 200)
    const read = await Promise.all(ids.map(async (id) => await store.pets.findById(id!)))
    assert.ok(read.every((json) => json !== undefined))
    assert.equal(log.warnings.length, 1)
  })
}
