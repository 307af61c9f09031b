import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { setImmediate } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { CLOCK_READ_EVERY_MS, DatabaseClock, type ServerTimeReading } from '../../src/store/postgres/database-clock.js'
import { build, createKey, defer, manualClock, tempDir, TEST_STORES } from '../helper.js'
import { runCli } from '../process.js'

const HOUR_MS = 3_600_000

test('the database clock starts at the machine\'s time, takes the server\'s from its first reading, carries it on elapsed time, reads it again each minute and keeps the last reading through failures', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const local = manualClock(Date.parse('2026-12-05T12:00:00Z'))
  const clock = new DatabaseClock(local)
  defer(t, () => { clock.stop() })
  assert.equal(clock.now(), Date.parse('2026-12-05T12:00:00Z'), 'before any reading')

  // The server is an hour ahead; its answer comes back 100 ms after it was read.
  let serverTime = Date.parse('2026-12-05T13:00:00Z')
  let answer = async (): Promise<ServerTimeReading> => {
    const readAt = local.elapsed()
    local.advance(100)
    return { serverTime, readAt }
  }
  await clock.follow(async () => await answer())
  assert.equal(clock.now(), serverTime + 100)
  local.advance(5_000)
  assert.equal(clock.now(), serverTime + 5_100, 'carried on elapsed time')
  local.step(-HOUR_MS)
  assert.equal(clock.now(), serverTime + 5_100, 'a step of the machine\'s time of day does not move it')
  assert.equal(clock.elapsed(), local.elapsed())

  const nextMinute = async () => {
    local.advance(CLOCK_READ_EVERY_MS)
    t.mock.timers.tick(CLOCK_READ_EVERY_MS)
    await setImmediate()
  }
  serverTime = Date.parse('2026-12-05T14:00:00Z') // the server's clock stepped
  answer = async () => ({ serverTime, readAt: local.elapsed() })
  await nextMinute()
  assert.equal(clock.now(), serverTime)
  answer = async () => { throw new Error('connect ECONNREFUSED 127.0.0.1:5432') }
  await nextMinute()
  assert.equal(clock.now(), serverTime + CLOCK_READ_EVERY_MS, 'the last reading stands')

  const unread = new DatabaseClock(local)
  defer(t, () => { unread.stop() })
  await unread.follow(async () => await answer())
  assert.equal(unread.now(), local.now(), 'no reading yet: the machine\'s time of day')
})

/** Date.now() an hour behind in this process until the test ends: the machine's clock is wrong, the database's right. */
function machineClockBehind (t: TestContext): () => number {
  const trueNow = Date.now
  t.mock.method(Date, 'now', () => trueNow() - HOUR_MS)
  return trueNow
}

for (const store of TEST_STORES.filter(({ name }) => name === 'postgres')) {
  test('on PostgreSQL, an instance on a machine whose clock is an hour behind refuses a key the database\'s clock has seen expire', async (t) => {
    const trueNow = machineClockBehind(t)
    const testApp = await build(t, { store })
    assert.ok(Math.abs(testApp.store.clock.now() - trueNow()) < 5_000, `the store's clock reads ${new Date(testApp.store.clock.now()).toISOString()}`)
    const { key } = await createKey(testApp.db, 'expired half an hour ago', { expiresAt: new Date(trueNow() - HOUR_MS / 2) })
    const refused = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })
    assert.equal(refused.statusCode, 401)
  })

  test('on PostgreSQL, keys create on a machine whose clock is an hour behind reckons --expires-in and --expires-at by the database\'s time', async (t) => {
    // The command's process has its clock set back as this one's would be.
    const behind = join(tempDir(t), 'clock-behind.mjs')
    writeFileSync(behind, `const trueNow = Date.now\nDate.now = () => trueNow() - ${HOUR_MS}\n`)
    const env = { DATABASE_URL: await store.databaseUrl(t), NODE_OPTIONS: `--import=${pathToFileURL(behind).href}` }
    const created = await runCli(['keys', 'create', '--name', 'ci', '--expires-in', '30m'], env)
    assert.equal(created.code, 0, created.stderr)
    const expiresAt = Date.parse(/expiring at (\S+)\./.exec(created.stdout)![1]!)
    assert.ok(Math.abs(expiresAt - (Date.now() + HOUR_MS / 2)) < 60_000, `expiring at ${new Date(expiresAt).toISOString()}`)

    const halfAnHourAgo = new Date(Date.now() - HOUR_MS / 2).toISOString()
    const past = await runCli(['keys', 'create', '--name', 'late', '--expires-at', halfAnHourAgo], env)
    assert.equal(past.code, 2, 'in the machine\'s future, in the database\'s past')
    assert.match(past.stderr, /is already past/)
  })
}
