import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import pg from 'pg'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { PET_CHANGES_CHANNEL, PostgresChangeFeed } from '../../src/store/postgres/change-feed.js'
import { storeOptionsFrom } from '../../src/store/open-store.js'
import { createCuttableProxy } from '../cuttable-proxy.js'
import { checkAnswers, createKey, defer, directUrlOf, openTestStore, TEST_LIMITS, TEST_STORES } from '../helper.js'

// The bound the issue sets on what another instance's reads may miss of a commit.
const STALENESS_BOUND_MS = 100

interface Instance {
  /** The pets of `categoryId` this instance answers, by id. */
  petsOf: (categoryId: number) => Promise<number[]>
  create: (categoryId: number) => Promise<number>
}

/** An instance on `databaseUrl`; through a pooler, its direct connection is the test store's unless `directUrl` says otherwise. */
async function startInstance (t: TestContext, databaseUrl: string, authorization: () => string, directUrl?: string): Promise<Instance> {
  const config = loadConfig({ DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '0' })
  const store = openTestStore(t, databaseUrl, { ...storeOptionsFrom(config), directUrl })
  await migrateToLatest(store.db)
  const app = await buildApp({ config, store, limits: TEST_LIMITS })
  defer(t, () => app.close())
  checkAnswers(t, app)
  return {
    petsOf: async (categoryId) => {
      const response = await app.inject({ url: `/v1/pets?categoryId=${categoryId}&limit=100`, headers: { authorization: authorization() } })
      assert.equal(response.statusCode, 200, response.body)
      return (response.json() as Array<{ id: number }>).map((pet) => pet.id)
    },
    create: async (categoryId) => {
      const response = await app.inject({ method: 'POST', url: '/v1/pets', headers: { authorization: authorization() }, payload: { name: 'Rex', categoryId } })
      assert.equal(response.statusCode, 201, response.body)
      return (response.json() as { id: number }).id
    }
  }
}

/**
 * Two instances of the service on one new database (listening through DATABASE_URL when
 * `withoutDirectUrl`, B through what `listenerOfB` makes of the server's URL if given), and a
 * connection of the test's own to it.
 */
async function twoInstances (t: TestContext, postgres: (typeof TEST_STORES)[number], { withoutDirectUrl = false, listenerOfB }: { withoutDirectUrl?: boolean, listenerOfB?: (server: URL) => Promise<string> } = {}) {
  const databaseUrl = await postgres.databaseUrl(t)
  const directUrl = withoutDirectUrl ? databaseUrl : undefined
  let authorization = ''
  const a = await startInstance(t, databaseUrl, () => authorization, directUrl)
  const b = await startInstance(t, databaseUrl, () => authorization, await listenerOfB?.(new URL(directUrlOf(databaseUrl) ?? databaseUrl)) ?? directUrl)
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  defer(t, () => admin.end())
  // Not an instance that created the key: neither may have it cached.
  const { key } = await createKey(openTestStore(t, databaseUrl).db)
  authorization = `Bearer ${key}`
  let category = 1000
  return {
    a,
    b,
    admin,
    /** A category no pet has yet. */
    newCategory: () => ++category,
    /** Adds a pet without the notification every change sends: only an instance that does not cache sees it. */
    insertUnannounced: async (categoryId: number) => {
      await admin.query('begin; alter table pets disable trigger pets_changed')
      await admin.query("insert into pets (name, category_id, status, created_at) values ('Hidden', $1, 'available', '2026-11-24T00:00:00.000Z')", [categoryId])
      await admin.query('alter table pets enable trigger pets_changed; commit')
    }
  }
}

/** Polls `check` until it is true, for at most `withinMs`; how long that took, or undefined if it never was. */
async function timeUntil (check: () => Promise<boolean>, withinMs: number): Promise<number | undefined> {
  const start = performance.now()
  while (performance.now() - start <= withinMs) {
    if (await check()) return performance.now() - start
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  return undefined
}

/** Resolves once `instance` answers a read from its cache: a change made without notification stays unseen. */
async function untilCaching (instance: Instance, setup: Awaited<ReturnType<typeof twoInstances>>, withinMs: number): Promise<void> {
  const caching = await timeUntil(async () => {
    const category = setup.newCategory()
    await instance.petsOf(category)
    await setup.insertUnannounced(category)
    return (await instance.petsOf(category)).length === 0
  }, withinMs)
  assert.notEqual(caching, undefined, `the instance did not cache its reads within ${withinMs} ms`)
}

for (const postgres of TEST_STORES.filter((store) => store.name === 'postgres')) {
  describe('on postgres', () => {
    test('instances cache their reads, see their own writes at once and other instances\' within 100 ms under concurrent writes', async (t) => {
      const setup = await twoInstances(t, postgres)
      const { a, b } = setup
      await untilCaching(a, setup, 2000)
      await untilCaching(b, setup, 2000)

      // What a cached page misses comes in with the next notification on the channel, whoever sends it.
      const category = setup.newCategory()
      await b.petsOf(category)
      await setup.insertUnannounced(category)
      assert.deepEqual(await b.petsOf(category), [])
      await setup.admin.query('select pg_notify($1, \'\')', [PET_CHANGES_CHANNEL])
      assert.notEqual(await timeUntil(async () => (await b.petsOf(category)).length === 1, STALENESS_BOUND_MS), undefined)

      // Three writers on A, each reading a new category on both instances (so both cache it), then creating a pet in it.
      const staleness: number[] = []
      await Promise.all([0, 1, 2].map(async () => {
        for (let i = 0; i < 25; i++) {
          const category = setup.newCategory()
          assert.deepEqual(await a.petsOf(category), [])
          assert.deepEqual(await b.petsOf(category), [])
          const id = await a.create(category)
          assert.deepEqual(await a.petsOf(category), [id], 'an instance sees its own write at once')
          const seenAfter = await timeUntil(async () => (await b.petsOf(category)).includes(id), 1000)
          assert.notEqual(seenAfter, undefined, 'another instance sees the write')
          staleness.push(seenAfter!)
        }
      }))
      staleness.sort((x, y) => x - y)
      t.diagnostic(`staleness on B of A's writes: p50 ${staleness[staleness.length >> 1]!.toFixed(1)} ms, max ${staleness.at(-1)!.toFixed(1)} ms`)
      assert.ok(staleness.at(-1)! <= STALENESS_BOUND_MS, `a write was unseen for ${staleness.at(-1)!.toFixed(1)} ms`)
    })

    test('a lost notification connection turns the cache off until it is back, and it comes back by itself', async (t) => {
      const setup = await twoInstances(t, postgres)
      const { b } = setup
      await untilCaching(b, setup, 2000)
      const category = setup.newCategory()
      await b.petsOf(category)

      await setup.admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = \'petstore change feed\'')
      // Changes missed while the connection is down are seen nonetheless: the cache is emptied and bypassed.
      await setup.insertUnannounced(category)
      assert.notEqual(await timeUntil(async () => (await b.petsOf(category)).length === 1, STALENESS_BOUND_MS), undefined)
      const bypassed = setup.newCategory()
      await b.petsOf(bypassed)
      await setup.insertUnannounced(bypassed)
      assert.equal((await b.petsOf(bypassed)).length, 1, 'reads go to the database while the notifications are not heard')

      // Listening again (a second later), the instance caches again.
      await untilCaching(b, setup, 5000)
    })

    test('a notification connection that hangs (no answer, no error) turns the cache off within 100 ms, and on again when it answers', async (t) => {
      let proxy: Awaited<ReturnType<typeof createCuttableProxy>> | undefined
      const setup = await twoInstances(t, postgres, {
        listenerOfB: async (server) => {
          proxy = await createCuttableProxy(server)
          defer(t, () => proxy!.close())
          const viaProxy = new URL(server)
          viaProxy.host = `127.0.0.1:${proxy.port}`
          return viaProxy.toString()
        }
      })
      const { a, b } = setup
      await untilCaching(b, setup, 2000)
      const category = setup.newCategory()
      assert.deepEqual(await b.petsOf(category), [])

      proxy!.freeze()
      defer(t, () => proxy!.thaw()) // before B closes (deferred later, run earlier): ending a frozen connection waits for it
      const id = await a.create(category)
      const seenAfter = await timeUntil(async () => (await b.petsOf(category)).includes(id), 1000)
      assert.notEqual(seenAfter, undefined, 'B sees the write though its notification cannot reach it')
      t.diagnostic(`seen by B ${seenAfter!.toFixed(1)} ms after the 201`)
      assert.ok(seenAfter! <= STALENESS_BOUND_MS, `unseen for ${seenAfter!.toFixed(1)} ms`)

      proxy!.thaw()
      await untilCaching(b, setup, 2000)
    })

    test('a notification connection that cannot be made is logged once, however often it is tried, and once more when it is back', async (t) => {
      const databaseUrl = await postgres.databaseUrl(t)
      const server = new URL(directUrlOf(databaseUrl) ?? databaseUrl)
      // The feed's way to the server, cut until the server is to be reachable again.
      const proxy = await createCuttableProxy(server)
      proxy.cut()
      // Closed after the feed (deferred first), which ends the connections through it.
      defer(t, () => proxy.close())
      const viaProxy = new URL(server)
      viaProxy.host = `127.0.0.1:${proxy.port}`
      const admin = new pg.Client({ connectionString: server.toString() })
      await admin.connect()
      defer(t, () => admin.end())
      const lines: Array<{ level: string, message: string }> = []
      const record = (level: string) => (_details: object, message: string) => { lines.push({ level, message }) }
      const feed = new PostgresChangeFeed({
        connectionString: viaProxy.toString(),
        notify: async (payload) => { await admin.query('select pg_notify($1, $2)', [PET_CHANGES_CHANNEL, payload]) },
        connectMs: 1000,
        log: { info: record('info'), warn: record('warn'), error: record('error') },
        retryMs: 10
      })
      defer(t, () => feed.close())

      assert.equal(feed.version(), undefined)
      // Tried at 10, 30, 70, 150 and 310 ms: five attempts that fail after the first.
      await new Promise((resolve) => setTimeout(resolve, 400))
      assert.deepEqual(lines.map(({ level }) => level), ['warn'])
      assert.match(lines[0]!.message, /^the change notifications of PostgreSQL are not heard: reads go to the database until they are/)

      proxy.restore()
      assert.notEqual(await timeUntil(async () => feed.version() !== undefined, 2000), undefined, 'the feed listens once the server is reachable')
      assert.deepEqual(lines.map(({ level }) => level), ['warn', 'info'])
      assert.match(lines[1]!.message, /^the change notifications of PostgreSQL are heard again after \d+\.\d s: reads are served from memory again$/)
    })

    test('probes go the way the writes go: writes re-pointed at another database (a pooler reloaded) turn the cache off within 100 ms, though the listener still answers', async (t) => {
      // The listener stays on the first database while the writes' connections move to the second,
      // as when PgBouncer is re-pointed and DATABASE_DIRECT_URL is not: the writes' notifications are
      // never heard, and a probe sent on the listener itself would still come back.
      const [first, second] = await Promise.all([postgres.databaseUrl(t), postgres.databaseUrl(t)])
      const writers = await Promise.all([first, second].map(async (url) => {
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        defer(t, () => client.end())
        return client
      }))
      let writes = writers[0]!
      const warnings: string[] = []
      const feed = new PostgresChangeFeed({
        connectionString: directUrlOf(first) ?? first,
        notify: async (payload) => { await writes.query('select pg_notify($1, $2)', [PET_CHANGES_CHANNEL, payload]) },
        connectMs: 1000,
        probeMs: 500,
        log: { info: () => {}, warn: (details, message) => { warnings.push(`${message}: ${(details as { err: Error }).err.message}`) }, error: () => {} }
      })
      defer(t, () => feed.close())
      assert.notEqual(await timeUntil(async () => feed.version() !== undefined, 2000), undefined, 'the feed listens')

      writes = writers[1]!
      const offAfter = await timeUntil(async () => feed.version() === undefined, 1000)
      assert.notEqual(offAfter, undefined, 'the cache goes off')
      assert.ok(offAfter! <= STALENESS_BOUND_MS, `the cache stayed on ${offAfter!.toFixed(1)} ms`)
      // The operator is told what to look at: the URL the listener took.
      await timeUntil(async () => warnings.length > 0, 2000)
      assert.match(warnings.join('\n'), /not heard[\s\S]*did not come back[\s\S]*DATABASE_DIRECT_URL does not name the same database as DATABASE_URL/)
    })

    // CI runs the suites a second time through PgBouncer in transaction mode, with the server behind it as TEST_DATABASE_DIRECT_URL.
    if (process.env.TEST_DATABASE_DIRECT_URL !== undefined) {
      test('through PgBouncer without DATABASE_DIRECT_URL, notifications cannot be trusted: the cache stays off and reads are fresh', async (t) => {
        const setup = await twoInstances(t, postgres, { withoutDirectUrl: true })
        for (let i = 0; i < 20; i++) {
          const category = setup.newCategory()
          assert.deepEqual(await setup.b.petsOf(category), [])
          await setup.insertUnannounced(category)
          assert.equal((await setup.b.petsOf(category)).length, 1)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })
    }
  })
}
