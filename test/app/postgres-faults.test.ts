import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chownSync, readdirSync, readFileSync } from 'node:fs'
import { connect, createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { lockIdOrder, PET_INSERT_LOCK } from '../../src/db/id-order-lock.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { isStoreUnavailable } from '../../src/store/store-errors.js'
import { build, createPet, createTestStore, defer, directUrlOf, errorOf, openTestStore, tempDir, TEST_STORES } from '../helper.js'
import { runCli } from '../process.js'

const DEADLINES = { DATABASE_CONNECT_TIMEOUT_MS: '300', DATABASE_STATEMENT_TIMEOUT_MS: '500' }
// The bound the README states: a connection's wait, then a statement's and the client's margin. Slack for a busy machine.
const ANSWER_BOUND_MS = 300 + 500 + 250 + 700

/**
 * A PostgreSQL cluster of the test's own on a spare port, so that it can be frozen without touching
 * anyone else's. `signal` reaches the postmaster first (so that it forks no more), then every backend.
 */
async function startPostgres (t: TestContext): Promise<{ url: string, signal: (signal: NodeJS.Signals) => void }> {
  const bin = join('/usr/lib/postgresql', readdirSync('/usr/lib/postgresql').sort().at(-1)!, 'bin')
  const dir = tempDir(t)
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))
  chownSync(dir, uid, gid)
  const data = join(dir, 'data')
  execFileSync(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions'], { uid, gid, stdio: 'ignore' })
  // Below Linux's ephemeral ports (32768 and up): one of them may be held by a client socket of the
  // suite, and the cluster could then not listen (CI, 29 November: ECONNREFUSED on port 37404).
  const port = 20_000 + Math.floor(Math.random() * 12_000)
  const server = spawn(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    { uid, gid, stdio: 'ignore' })
  const signal = (name: NodeJS.Signals) => {
    process.kill(server.pid!, name)
    // Stopped only once it runs again: until then it may still start a backend, which must be listed.
    if (name === 'SIGSTOP') {
      const until = Date.now() + 1000
      while (readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]![0] !== 'T' && Date.now() < until) { /* a few µs */ }
    }
    const children = readFileSync(`/proc/${server.pid}/task/${server.pid}/children`, 'utf8').trim().split(' ')
    for (const child of children.filter(Boolean)) {
      try {
        process.kill(Number(child), name)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error // a backend that just ended
      }
    }
  }
  defer(t, async () => {
    signal('SIGCONT')
    server.kill('SIGQUIT')
    if (server.exitCode === null) await once(server, 'exit')
  })
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  for (let tries = 0; ; tries++) {
    const client = new pg.Client(url)
    try {
      await client.connect()
      await client.end()
      return { url, signal }
    } catch (error) {
      if (tries > 200) throw error
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
}

/**
 * A proxy to `target` that passes bytes until a client says goodbye (PostgreSQL's Terminate message),
 * and then neither passes nor closes anything, as a server or network frozen at that moment would.
 */
async function startGoodbyeSwallowingProxy (t: TestContext, target: URL): Promise<number> {
  const server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname)
    let frozen = false
    client.on('data', (bytes) => {
      if (bytes[0] === 0x58 && bytes.length === 5) frozen = true // 'X', length 4
      if (!frozen) upstream.write(bytes)
    })
    upstream.on('data', (bytes) => { if (!frozen) client.write(bytes) })
    for (const socket of [client, upstream]) socket.on('error', () => {})
    defer(t, () => { client.destroy(); upstream.destroy() })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  defer(t, () => { server.close() })
  return (server.address() as AddressInfo).port
}

// CI sets TEST_DATABASE_URL where PostgreSQL is installed.
/**
 * A cluster of the test's own (see startPostgres) with a role `shop` and a database `shop`, which the
 * role owns if told; its administrator's open session, and the URL the service connects with.
 */
async function shopOnOwnCluster (t: TestContext, { password, owned }: { password?: string, owned: boolean }): Promise<{ admin: pg.Client, url: URL }> {
  const postgres = await startPostgres(t)
  const admin = new pg.Client(postgres.url)
  await admin.connect()
  defer(t, () => admin.end())
  await admin.query(`create role shop login${password === undefined ? '' : ` password '${password}'`}`)
  await admin.query(`create database shop${owned ? ' owner shop' : ''}`)
  const url = new URL(postgres.url)
  Object.assign(url, { username: 'shop', password: password ?? '', pathname: '/shop' })
  return { admin, url }
}

if (process.env.TEST_DATABASE_URL) {
  test('a command whose connections\' goodbyes are never answered (the server frozen as it ends) exits within the connection deadline', { timeout: 30_000 }, async (t) => {
    const { databaseUrl } = await createTestStore(t, TEST_STORES.find(({ name }) => name === 'postgres'))
    const url = new URL(databaseUrl)
    url.port = String(await startGoodbyeSwallowingProxy(t, new URL(databaseUrl)))
    const started = performance.now()
    // Through the migrations' lock, released by ending its connection, and the pool, ended at exit.
    const result = await runCli(['keys', 'list'], { DATABASE_URL: url.toString(), DATABASE_CONNECT_TIMEOUT_MS: '1000' }, { killAfterMs: 12_000 })
    assert.equal(result.code, 0, `exit ${result.code}, after ${Math.round(performance.now() - started)} ms: ${result.stderr}`)
    assert.match(result.stdout, /^No API keys/)
  })

  // The service frozen (SIGSTOP) in a transaction past the deadline: the server ends the session, and
  // the next statement, once the service runs again, gets the reason (25P03). It answered 500.
  test('a transaction the server ended for sitting idle (the service frozen in it) is a store fault, and the store answers after it', async (t) => {
    const { databaseUrl } = await createTestStore(t, TEST_STORES.find(({ name }) => name === 'postgres'))
    // To the server itself, whose words these are: a pooler between says it its own way.
    const store = openTestStore(t, directUrlOf(databaseUrl) ?? databaseUrl, { deadlines: { connectMs: 1000, statementMs: 100 }, poolSize: 1 })
    const ended = await store.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600) // frozen: nothing read meanwhile
      await sql`select 1`.execute(trx)
    }).then(() => undefined, (error: unknown) => error)
    assert.equal((ended as { code?: string } | undefined)?.code, '25P03', String(ended))
    assert.equal(isStoreUnavailable(ended), true)
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(store.db)
    assert.deepEqual(rows, [{ one: 1 }])
  })

  test('a migrator holding the migrations\' lock (stuck or frozen) makes the next one fail at the deadline, saying why', async (t) => {
    // Kysely creates its tables before it takes the lock: created here, under the default deadlines, a
    // loaded machine cannot time that out under the short one below.
    const { databaseUrl } = await createTestStore(t, TEST_STORES.find(({ name }) => name === 'postgres'))
    const holder = new pg.Client(databaseUrl)
    await holder.connect()
    defer(t, () => holder.end())
    await holder.query('begin')
    await holder.query('select pg_advisory_xact_lock(3853314791062309107)') // the lock migration-lock.ts takes
    const store = openTestStore(t, databaseUrl, { deadlines: { connectMs: 1000, statementMs: 200 } })
    const started = performance.now()
    await assert.rejects(migrateToLatest(store.db), /another process has held the migrations' lock for over 2\.4 s/i)
    assert.ok(performance.now() - started < 5000, `failed after ${Math.round(performance.now() - started)} ms`)
    await holder.query('rollback')
    assert.deepEqual(await migrateToLatest(store.db), { applied: [], newer: [] }, 'takes the lock once it is free, with nothing left to do')
  })

  test('a frozen PostgreSQL turns into 503s within the deadlines, then into answers when it thaws', { timeout: 30_000 }, async (t) => {
    const postgres = await startPostgres(t)
    const testApp = await build(t, { store: { name: 'postgres', databaseUrl: async () => postgres.url }, env: DEADLINES })
    const { app, auth } = testApp
    const rex = await createPet(testApp, { name: 'Rex', categoryId: 1 })
    const requests = [
      { url: '/v1/pets', headers: auth },
      { url: `/v1/pets/${rex.id}`, headers: auth },
      { method: 'POST' as const, url: '/v1/pets', headers: auth, payload: { name: 'Lost', categoryId: 1 } },
      { method: 'POST' as const, url: '/v1/pets', headers: { ...auth, 'idempotency-key': 'frozen' }, payload: { name: 'Lost', categoryId: 1 } },
      { method: 'POST' as const, url: '/v1/store/orders', headers: auth, payload: { petId: rex.id } },
      { url: '/readyz' }
    ]
    const timed = async (request: (typeof requests)[number]) => {
      const started = performance.now()
      const response = await app.inject(request)
      return { request, response, ms: performance.now() - started }
    }

    postgres.signal('SIGSTOP')
    // Twice: first on the pool's open connections, whose statements time out; then on new
    // connections, which the frozen server accepts and never answers.
    for (let round = 0; round < 2; round++) {
      const answers = await Promise.all(requests.map(timed))
      t.diagnostic(`frozen, round ${round + 1}: answers within ${Math.round(Math.max(...answers.map(({ ms }) => ms)))} ms`)
      for (const { request, response, ms } of answers) {
        assert.equal(response.statusCode, 503, `${request.url}: ${response.body}`)
        assert.equal(errorOf(response).code, 'service_unavailable')
        assert.equal(response.headers['retry-after'], '1')
        assert.ok(ms < ANSWER_BOUND_MS, `${request.url} answered after ${Math.round(ms)} ms`)
      }
    }
    // A create that arrives while a group is committing is answered when that group fails, not after
    // a commit of its own.
    const ahead = timed(requests[2]!)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const behind = timed(requests[2]!)
    const answeredAt = async (answer: ReturnType<typeof timed>) => {
      const { response } = await answer
      assert.equal(response.statusCode, 503)
      return performance.now()
    }
    const [aheadAt, behindAt] = await Promise.all([answeredAt(ahead), answeredAt(behind)])
    assert.ok(behindAt - aheadAt < 100, `answered ${Math.round(behindAt - aheadAt)} ms after the group ahead`)
    const started = performance.now()
    await assert.rejects(testApp.store.pets.insertMany([{ name: 'Lost', categoryId: 1n, status: 'available' }]),
      (error) => isStoreUnavailable(error), 'an import fails as unavailable')
    assert.ok(performance.now() - started < ANSWER_BOUND_MS)

    postgres.signal('SIGCONT')
    // The thawed postmaster first serves the connections queued while it was frozen (their clients long
    // gone), so on a slow machine a new one may still miss this test's 300 ms connect deadline: ready
    // again, by itself, within a few seconds.
    const thawed = performance.now()
    while ((await app.inject({ url: '/readyz' })).statusCode !== 200) {
      assert.ok(performance.now() - thawed < 5000, 'ready again within 5 s of the thaw')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const list = await app.inject({ url: '/v1/pets', headers: auth })
    assert.equal(list.statusCode, 200)
    assert.deepEqual(list.json(), [rex], 'nothing half-written while frozen')
    assert.equal((await app.inject(requests[2]!)).statusCode, 201)
  })

  test('a server that refuses new connections (a wrong password, a database closed to connections) turns into 503s, not 500s, then into answers', { timeout: 30_000 }, async (t) => {
    const { admin, url } = await shopOnOwnCluster(t, { password: 'first-secret', owned: true })
    // Passwords on TCP from now on; the admin's session, open already, stays.
    await admin.query(`copy (select 'host all all 127.0.0.1/32 scram-sha-256') to '${(await admin.query('show hba_file')).rows[0].hba_file}'`)
    await admin.query('select pg_reload_conf()')
    const testApp = await build(t, { store: { name: 'postgres', databaseUrl: async () => url.toString() }, env: DEADLINES })
    const { app, auth } = testApp
    const rex = await createPet(testApp, { name: 'Rex', categoryId: 1 })
    const requests = [
      { url: `/v1/pets/${rex.id}`, headers: auth },
      { method: 'POST' as const, url: '/v1/pets', headers: auth, payload: { name: 'Lost', categoryId: 1 } },
      { url: '/v1/events', headers: auth }
    ]
    const endSessions = "select pg_terminate_backend(pid) from pg_stat_activity where datname = 'shop'"
    for (const refusal of ["alter role shop password 'second-secret'", 'alter database shop allow_connections false']) {
      await admin.query(refusal)
      await admin.query(endSessions)
      for (const request of requests) {
        const response = await app.inject(request)
        assert.equal(response.statusCode, 503, `${refusal}: ${request.url}: ${response.body}`)
        assert.equal(errorOf(response).code, 'service_unavailable')
        assert.equal(response.headers['retry-after'], '1')
      }
      await admin.query("alter role shop password 'first-secret'; alter database shop allow_connections true")
      const back = await app.inject({ method: 'POST', url: '/v1/pets', headers: auth, payload: { name: 'Tom', categoryId: 1 } })
      assert.equal(back.statusCode, 201, `answers again after ${refusal}`)
    }
  })

  test('a role without the privilege the migrations need (CREATE on the schema, not granted by default since PostgreSQL 15) stops the start as a setting does: exit 2, in the server\'s words', { timeout: 30_000 }, async (t) => {
    const { url } = await shopOnOwnCluster(t, { owned: false })
    for (const args of [['serve'], ['keys', 'list']]) {
      const result = await runCli(args, { DATABASE_URL: url.toString(), PORT: '0', HOST: '127.0.0.1' })
      assert.equal(result.code, 2, result.stderr)
      assert.equal(result.stderr, 'petstore: Migration failed: permission denied for schema public\n', args.join(' '))
    }
  })

  test('a database turned read-only (a failover to a standby) or a privilege revoked turns creates into 503s, not 500s; once it is writable the sessions opened read-only are replaced as they fail, and creates succeed again within a few rounds', { timeout: 30_000 }, async (t) => {
    const { admin, url } = await shopOnOwnCluster(t, { owned: true })
    const testApp = await build(t, { store: { name: 'postgres', databaseUrl: async () => url.toString() }, env: DEADLINES })
    const { app, auth } = testApp
    let keys = 0
    // Plain creates (a statement of their own) and idempotent ones (a transaction, through Kysely), and reads, which a read-only session serves.
    const round = async () => (await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: i % 2 === 0 ? auth : { ...auth, 'idempotency-key': `key-${++keys}` },
        payload: { name: 'Rex', categoryId: 1 }
      })),
      ...Array.from({ length: 4 }, (_, i) => app.inject({ url: `/v1/pets?categoryId=${i + 2}`, headers: auth }))
    ])).map((response) => {
      if (response.statusCode === 503) assert.equal(response.headers['retry-after'], '1')
      return response.statusCode
    })
    const ANSWERED = [...Array(8).fill(201), ...Array(4).fill(200)]
    assert.deepEqual(await round(), ANSWERED)

    const owner = new pg.Client(url.toString())
    owner.on('error', () => {}) // ended below with the service's sessions
    await owner.connect()
    defer(t, () => owner.end())
    await owner.query('revoke insert on pets from shop')
    const refused = await app.inject({ method: 'POST', url: '/v1/pets', headers: auth, payload: { name: 'Rex', categoryId: 1 } })
    assert.equal(refused.statusCode, 503, refused.body)
    assert.equal(errorOf(refused).code, 'service_unavailable')
    await owner.query('grant insert on pets to shop')
    assert.deepEqual(await round(), ANSWERED)

    await admin.query('alter database shop set default_transaction_read_only = on')
    await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = 'shop'")
    for (let i = 0; i < 3; i++) {
      const statuses = await round()
      assert.deepEqual(statuses.slice(0, 8), Array(8).fill(503), 'creates refused')
      // The first reads may find their sessions ended (503); the next are served.
      if (i > 0) assert.deepEqual(statuses.slice(8), Array(4).fill(200), 'reads served')
    }
    await admin.query('alter database shop reset default_transaction_read_only')
    // A session opened meanwhile fails the first write it is given (reads it serves), and is replaced:
    // of the test store's 4, so in 4 rounds at most, whenever they come.
    const rounds: number[][] = []
    for (let i = 0; i < 8; i++) rounds.push(await round())
    const failed = rounds.filter((statuses) => statuses.join() !== ANSWERED.join())
    assert.ok(failed.length <= 4, `writable again, yet: ${JSON.stringify(rounds)}`)
    assert.ok(failed.flat().every((status) => status === 201 || status === 200 || status === 503), JSON.stringify(failed))
  })

  test('the server ends a transaction left idle (its instance frozen) and a wait for a lock, at the deadline', { timeout: 30_000 }, async (t) => {
    const postgres = await startPostgres(t)
    const testApp = await build(t, { store: { name: 'postgres', databaseUrl: async () => postgres.url }, env: DEADLINES })
    const create = async (name: string) => await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 1 } })

    // An instance frozen inside a transaction holds the lock every create takes, until the server
    // ends its session for idling past the deadline.
    let thaw = () => {}
    const frozen = testApp.db.transaction().execute(async (trx) => {
      await lockIdOrder(trx, PET_INSERT_LOCK)
      await new Promise<void>((resolve) => { thaw = resolve })
    })
    defer(t, () => thaw())
    await new Promise((resolve) => setTimeout(resolve, 700))
    assert.equal((await create('Rex')).statusCode, 201, 'the lock was freed')
    thaw()
    await assert.rejects(frozen, 'the idle transaction was ended')

    // A client that holds the lock and is not idle (here: one outside the service's deadlines): a
    // create gives up at its deadline, and its statement on the server ends then too, instead of
    // waiting there for the lock, holding a connection.
    const holder = new pg.Client(postgres.url)
    await holder.connect()
    defer(t, () => holder.end())
    await holder.query(`begin; select pg_advisory_xact_lock(${PET_INSERT_LOCK})`)
    const started = performance.now()
    const blocked = await create('Tom')
    assert.equal(blocked.statusCode, 503, blocked.body)
    assert.ok(performance.now() - started < ANSWER_BOUND_MS)
    const waiting = async () => {
      const { rows: [row] } = await holder.query<{ count: string }>("select count(*) from pg_stat_activity where wait_event_type = 'Lock'")
      return Number(row!.count)
    }
    for (let tries = 0; await waiting() > 0; tries++) {
      assert.ok(tries < 20, 'a backend is still waiting for the lock')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await holder.query('rollback')
    assert.equal((await create('Tom')).statusCode, 201)
  })

  test('a connection the server ends inside a transaction fails with the server\'s reason, not the failed rollback\'s', { timeout: 30_000 }, async (t) => {
    const postgres = await startPostgres(t)
    // The default deadlines: the create must still be waiting when its session is ended.
    const testApp = await build(t, { store: { name: 'postgres', databaseUrl: async () => postgres.url } })
    const holder = new pg.Client(postgres.url)
    await holder.connect()
    defer(t, () => holder.end())
    await holder.query(`begin; select pg_advisory_xact_lock(${PET_INSERT_LOCK})`)
    const create = assert.rejects(testApp.store.pets.create({ pet: { name: 'Rex', categoryId: 1n, status: 'available' } }), { code: '57P01' })
    // As a fast shutdown does to every session: end the one waiting for the lock, mid-transaction.
    for (let tries = 0; ; tries++) {
      const { rows } = await holder.query("select pg_terminate_backend(pid) from pg_stat_activity where wait_event_type = 'Lock'")
      if (rows.length > 0) break
      assert.ok(tries < 300, 'the create never waited for the lock')
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await create
    await holder.query('rollback')
    assert.equal((await createPet(testApp, { name: 'Tom', categoryId: 1 })).name, 'Tom', 'the pool replaced the lost connection')
  })
}
