import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { MIGRATIONS } from '../../src/db/migrate.js'
import { forEachStore, openTestStore } from '../helper.js'
import { runCli, startServer } from '../process.js'

const LATEST = Object.keys(MIGRATIONS).sort().at(-1)!

/** Records `name` in the store's migrations, as a build that has it would once it applied it. */
async function recordMigration (t: Parameters<typeof openTestStore>[0], databaseUrl: string, name: string): Promise<void> {
  const { db } = openTestStore(t, databaseUrl)
  await sql`insert into kysely_migration (name, timestamp) values (${name}, ${new Date().toISOString()})`.execute(db)
}

forEachStore((store) => {
  test('serve says which migrations it applied to the store, and none on the next start', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const first = await startServer(t, env)
    const applied = first.output().split('\n').filter((line) => line.includes('migration')).map((line) => JSON.parse(line))
    assert.deepEqual(applied.map(({ level, msg, migrations }) => ({ level, msg, migrations })), [
      { level: 30, msg: `applied ${Object.keys(MIGRATIONS).length} migrations to the store`, migrations: Object.keys(MIGRATIONS) }
    ])
    assert.equal(await first.stop(), 0)
    const second = await startServer(t, env)
    assert.doesNotMatch(second.output(), /migration/)
  })

  test('a store a newer build has migrated is served as it is, with a warning, as during a rolling upgrade', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    assert.equal((await runCli(['migrate'], env)).code, 0)
    await recordMigration(t, env.DATABASE_URL, '999-from-a-newer-build')

    const migrate = await runCli(['migrate'], env)
    assert.equal(migrate.code, 0, migrate.stderr)
    assert.equal(migrate.stdout, 'Nothing applied: the store is ahead of this build (see the warning).\n')
    assert.equal(migrate.stderr, 'petstore: warning: a newer build has migrated the store (999-from-a-newer-build): this one serves it without what they add, as during an upgrade; finish the upgrade\n')
    const created = await runCli(['keys', 'create', '--name', 'during the upgrade'], env)
    assert.equal(created.code, 0, created.stderr)
    assert.match(created.stderr, /a newer build has migrated the store/)

    const server = await startServer(t, env)
    const warning = server.output().split('\n').filter((line) => line.includes('newer build')).map((line) => JSON.parse(line))
    assert.deepEqual(warning.map(({ level, migrations }) => ({ level, migrations })), [{ level: 40, migrations: ['999-from-a-newer-build'] }])
    const key = created.stdout.trimEnd().split('\n').at(-1)!
    const response = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' })
    assert.equal(response.status, 201)
  })

  test('a store that records a newer migration but lacks one of this build\'s own is refused, naming both', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    assert.equal((await runCli(['migrate'], env)).code, 0)
    await recordMigration(t, env.DATABASE_URL, '999-from-a-newer-build')
    const { db } = openTestStore(t, env.DATABASE_URL)
    await sql`delete from kysely_migration where name = ${LATEST}`.execute(db)
    const result = await runCli(['keys', 'list'], env)
    assert.equal(result.code, 1, result.stderr)
    assert.match(result.stderr, new RegExp(`The store records migrations this build does not have \\(999-from-a-newer-build\\), and lacks some of its own \\(${LATEST}\\)`))
  })

  test('a store that records a migration among this build\'s own, not after them, is refused, naming it', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    assert.equal((await runCli(['migrate'], env)).code, 0)
    await recordMigration(t, env.DATABASE_URL, '005a-from-another-branch')
    for (const command of [['migrate'], ['keys', 'list'], ['serve']]) {
      const result = await runCli(command, env)
      assert.equal(result.code, 1, `${command.join(' ')}: ${result.stderr}`)
      const said = result.stderr + result.stdout
      assert.match(said, new RegExp(`The store records migrations this build does not have \\(005a-from-another-branch\\), and not after all of its own \\(up to ${LATEST}\\)`), command.join(' '))
      assert.doesNotMatch(said, /corrupted/, command.join(' '))
    }
  })
  test('a store that lacks one of this build\'s migrations but records those after it is refused, naming the one it lacks', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const { db } = openTestStore(t, env.DATABASE_URL)
    await sql`delete from kysely_migration where name = '006-create-categories'`.execute(db)
    const result = await runCli(['keys', 'list'], env)
    assert.equal(result.code, 1, result.stderr)
    assert.match(result.stderr, /The store lacks migrations of this build \(006-create-categories\) before others it records: it was changed by hand, or restored in part; restore a copy of it made by this build or an earlier one/)
    assert.doesNotMatch(result.stderr, /corrupted/)
  })
})
