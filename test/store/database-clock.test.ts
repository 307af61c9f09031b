import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { setImmediate, setTimeout as delay } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { CLOCK_READ_EVERY_MS, CLOCK_REFINED_AFTER_MS, DatabaseClock, type ServerTimeReading } from '../../src/store/postgres/database-clock.js'
import { createCuttableProxy } from '../cuttable-proxy.js'
import { build, createKey, defer, manualClock, openTestStore, tempDir, TEST_STORES } from '../helper.js'
import { runCli } from '../process.js'

const HOUR_MS = 3_600_000

/** A database server whose clock is `aheadMs` ahead of the test's manual one, answering after the delays given, in order, for each statement. */
function server (local: ReturnType<typeof manualClock>, aheadMs: number) {
  const delays: Array<{ there: number, back: number }> = []
  return {
    delays,
    ahead: (ms: number) => { aheadMs = ms },
    readTime: async (): Promise<ServerTimeReading> => {
      const { there, back } = delays.shift() ?? { there: 1, back: 1 }
      const sentAt = local.elapsed()
      local.advance(there)
      const serverTime = local.now() + aheadMs
      local.advance(back)
      return { serverTime, sentAt, answeredAt: local.elapsed() }
    }
  }
}

test('the database clock takes the server\'s time at its first reading, a finer one a second later from the fastest of three round trips, then one a minute, and keeps the last reading through failures', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] })
  const local = manualClock(Date.parse('2026-12-05T12:00:00Z'))
  const warnings: string[] = []
  const clock = new DatabaseClock(local, { info: () => {}, warn: (_details, message) => { warnings.push(message) }, error: () => {} })
  defer(t, () => { clock.stop() })
  assert.equal(clock.now(), local.now(), 'before any reading: the machine\'s time of day')
  assert.equal(clock.isKnown, false)

  const database = server(local, HOUR_MS)
  // The answer comes back 40 ms after the server read its clock: dated halfway, 20 ms early.
  database.delays.push({ there: 0, back: 40 })
  await clock.known(async () => await database.readTime())
  assert.equal(clock.isKnown, true)
  assert.equal(clock.now(), local.now() + HOUR_MS - 20)
  assert.deepEqual(warnings, ['this machine\'s clock is 3600.0 s behind the database server\'s: the service dates by the server\'s (keep both on NTP)'])

  const after = async (ms: number) => {
    t.mock.timers.tick(ms)
    await setImmediate()
  }
  // The first answer waits 300 ms in a busy event loop, the third 100 ms: the second, 20 ms each way, says best when the server answered.
  database.delays.push({ there: 0, back: 300 }, { there: 20, back: 20 }, { there: 0, back: 100 })
  await after(CLOCK_REFINED_AFTER_MS)
  assert.equal(clock.now(), local.now() + HOUR_MS)
  local.step(-HOUR_MS)
  assert.equal(clock.now(), local.now() + 2 * HOUR_MS, 'a step of the machine\'s time of day does not move it')
  assert.equal(clock.elapsed(), local.elapsed())

  database.ahead(2 * HOUR_MS + 5_000) // the server's own clock stepped 5 s
  await after(CLOCK_READ_EVERY_MS - 1)
  assert.equal(clock.now(), local.now() + 2 * HOUR_MS, 'not read again before the minute is out')
  await after(1)
  assert.equal(clock.now(), local.now() + 2 * HOUR_MS + 5_000)

  database.readTime = async () => { throw new Error('connect ECONNREFUSED 127.0.0.1:5432') }
  await after(CLOCK_READ_EVERY_MS)
  await after(CLOCK_READ_EVERY_MS)
  assert.equal(clock.now(), local.now() + 2 * HOUR_MS + 5_000, 'the last reading stands')
  assert.deepEqual(warnings.slice(1), ['the database server\'s time could not be read again: its last reading stands until it can (see Clock steps in docs/operations.md)'], 'said once, not once a minute')
  let asked = false
  database.readTime = async () => {
    asked = true
    return { serverTime: local.now(), sentAt: local.elapsed(), answeredAt: local.elapsed() }
  }
  clock.stop()
  await after(CLOCK_READ_EVERY_MS)
  assert.equal(asked, false, 'stopped: not read again')
})

test('until a first reading answers, the database clock is not known: a failed reading rejects, for the statement waiting on it, and the next reads again; one reading at a time', async (t) => {
  const local = manualClock()
  const clock = new DatabaseClock(local, { info: () => {}, warn: () => {}, error: () => {} })
  defer(t, () => { clock.stop() })
  await assert.rejects(clock.known(async () => { throw new Error('timeout expired') }), /timeout expired/)
  assert.equal(clock.isKnown, false)
  assert.equal(clock.now(), local.now(), 'the machine\'s time of day')

  let readings = 0
  const read = async () => {
    readings++
    await setImmediate()
    return { serverTime: local.now() + 10_000, sentAt: local.elapsed(), answeredAt: local.elapsed() }
  }
  await Promise.all([clock.known(read), clock.known(read), clock.known(read)])
  assert.equal(readings, 1)
  assert.equal(clock.isKnown, true)
  assert.equal(clock.now(), local.now() + 10_000)
})

/** Date.now() an hour behind in this process until the test ends: the machine's clock is wrong, the database's right. */
function machineClockBehind (t: TestContext): () => number {
  const trueNow = Date.now
  t.mock.method(Date, 'now', () => trueNow() - HOUR_MS)
  return trueNow
}

/** The environment of a command on `databaseUrl` whose process has its clock moved by `ms`, as its machine's would be. */
function commandWithClockOff (t: TestContext, databaseUrl: string, ms: number): NodeJS.ProcessEnv {
  const preload = join(tempDir(t), `clock-off-${ms}.mjs`)
  writeFileSync(preload, `const trueNow = Date.now\nDate.now = () => trueNow() + ${ms}\n`)
  return { DATABASE_URL: databaseUrl, NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` }
}

for (const store of TEST_STORES.filter(({ name }) => name === 'postgres')) {
  test('on PostgreSQL, the wait for a connection is no part of the first reading\'s round trip: a server slow to connect to does not set the clock ahead', async (t) => {
    const databaseUrl = await store.databaseUrl(t)
    const proxy = await createCuttableProxy(new URL(databaseUrl))
    defer(t, () => { proxy.close() })
    const throughProxy = new URL(databaseUrl)
    throughProxy.port = String(proxy.port)
    const opened = openTestStore(t, throughProxy.toString())
    proxy.freeze()
    const pinged = opened.ping()
    await delay(1_000)
    proxy.thaw()
    await pinged
    // Timed from before the connection, the reading was dated halfway through its second: 500 ms ahead.
    const aheadMs = opened.clock.now() - Date.now()
    assert.ok(Math.abs(aheadMs) < 100, `the store's clock is ${aheadMs} ms ahead of this machine's, the server's`)
  })

  test('on PostgreSQL, an instance on a machine whose clock is an hour behind refuses a key the database\'s clock has seen expire', async (t) => {
    const trueNow = machineClockBehind(t)
    const testApp = await build(t, { store })
    assert.ok(Math.abs(testApp.store.clock.now() - trueNow()) < 5_000, `the store's clock reads ${new Date(testApp.store.clock.now()).toISOString()}`)
    const { key } = await createKey(testApp.db, 'expired half an hour ago', { expiresAt: new Date(trueNow() - HOUR_MS / 2) })
    const refused = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })
    assert.equal(refused.statusCode, 401)
  })

  test('on PostgreSQL, keys create on a machine whose clock is an hour off reckons --expires-in and --expires-at by the database\'s time', async (t) => {
    const databaseUrl = await store.databaseUrl(t)
    const machineClockOff = (ms: number) => commandWithClockOff(t, databaseUrl, ms)
    const behind = machineClockOff(-HOUR_MS)
    const created = await runCli(['keys', 'create', '--name', 'ci', '--expires-in', '30m'], behind)
    assert.equal(created.code, 0, created.stderr)
    const expiresAt = Date.parse(/expiring at (\S+)\./.exec(created.stdout)![1]!)
    assert.ok(Math.abs(expiresAt - (Date.now() + HOUR_MS / 2)) < 60_000, `expiring at ${new Date(expiresAt).toISOString()}`)

    const halfAnHourAgo = new Date(Date.now() - HOUR_MS / 2).toISOString()
    const past = await runCli(['keys', 'create', '--name', 'late', '--expires-at', halfAnHourAgo], behind)
    assert.equal(past.code, 2, 'in the machine\'s future, in the database\'s past')
    assert.match(past.stderr, /is already past/)

    const inHalfAnHour = new Date(Date.now() + HOUR_MS / 2).toISOString()
    const ahead = await runCli(['keys', 'create', '--name', 'soon', '--expires-at', inHalfAnHour], machineClockOff(HOUR_MS))
    assert.equal(ahead.code, 0, `in the machine's past, in the database's future: ${ahead.stderr}`)
  })

  test('on PostgreSQL, every keys command on a machine whose clock is three hours behind dates what it stores by the database\'s time', async (t) => {
    const behind = commandWithClockOff(t, await store.databaseUrl(t), -3 * HOUR_MS)
    for (const command of [['keys', 'create', '--name', 'a'], ['keys', 'rotate', '1', '--overlap', '1h'], ['keys', 'revoke', '2']]) {
      const run = await runCli(command, behind)
      assert.equal(run.code, 0, `${command.join(' ')}: ${run.stderr}`)
    }
    const listed = await runCli(['keys', 'list', '--json'], behind)
    const keys = JSON.parse(listed.stdout) as Array<{ id: number, createdAt: string, expiresAt: string | null, revokedAt: string | null }>
    const times = keys.flatMap(({ id, createdAt, expiresAt, revokedAt }) => [[`${id} created`, createdAt], [`${id} revoked`, revokedAt], [`${id} expires`, expiresAt]])
    const expected = { '1 created': 0, '1 expires': HOUR_MS, '2 created': 0, '2 revoked': 0 }
    for (const [what, at] of times) {
      const offset = expected[what as keyof typeof expected]
      assert.equal(at === null, offset === undefined, `${what}: ${at}`)
      if (at !== null) assert.ok(Math.abs(Date.parse(at!) - (Date.now() + offset!)) < 60_000, `${what} at ${at}, by the machine's clock`)
    }
  })
}
