import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { findSetting } from '../../src/db/settings.repository.js'
import { build, checkAnswers, createKey, createTestStore, defer, errorOf, forEachStore, manualClock, TEST_LIMITS } from '../helper.js'

const RATE_LIMIT = /^"default";r=(\d+);t=(\d+)$/

forEachStore((store) => {
  test('the (N+1)th request of a key in a minute gets 429 with the rate-limit headers; other keys are unaffected', async (t) => {
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '3' } })
    for (let i = 0; i < 3; i++) {
      const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['ratelimit-policy'], '"default";q=3;w=60')
      assert.equal(RATE_LIMIT.exec(String(response.headers.ratelimit))?.[1], String(2 - i))
    }
    const limited = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.equal(limited.statusCode, 429)
    assert.equal(errorOf(limited).code, 'rate_limited')
    const retryAfter = Number(limited.headers['retry-after'])
    assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter))
    assert.equal(limited.headers['ratelimit-policy'], '"default";q=3;w=60')
    assert.equal(RATE_LIMIT.exec(String(limited.headers.ratelimit))?.[1], '0')

    const other = await createKey(testApp.db, 'other')
    const unaffected = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${other.key}` } })
    assert.equal(unaffected.statusCode, 200)
  })

  test('requests without a valid key are limited per client address', async (t) => {
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '2' } })
    const guess = { authorization: 'Bearer ps_guess' }
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: guess })).statusCode, 401)
    assert.equal((await testApp.app.inject({ url: '/v1/pets' })).statusCode, 401)
    const limited = await testApp.app.inject({ url: '/v1/pets', headers: guess })
    assert.equal(limited.statusCode, 429)
    assert.equal(errorOf(limited).code, 'rate_limited')
    const elsewhere = await testApp.app.inject({ url: '/v1/pets', headers: guess, remoteAddress: '10.9.8.7' })
    assert.equal(elsewhere.statusCode, 401, 'another address has its own budget')
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).statusCode, 200, 'valid keys are counted apart')
  })

  test('requests from many client addresses cannot push a key\'s counter out of memory: keys and addresses are counted apart', async (t) => {
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '2' }, limits: { rateLimitCounters: 3 } })
    const status = async () => (await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).statusCode
    assert.deepEqual([await status(), await status(), await status()], [200, 200, 429])
    // More addresses than counters are kept, each guessing a key once: they push out one another only.
    for (let i = 1; i <= 10; i++) {
      const guess = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer ps_guess' }, remoteAddress: `10.0.0.${i}` })
      assert.equal(guess.statusCode, 401)
    }
    assert.equal(await status(), 429, 'the key is still over its limit')
  })

  test('past the counters kept in memory, the one whose window started first is forgotten first, even if counted since', async (t) => {
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '2' }, limits: { rateLimitCounters: 2 } })
    const guess = async (address: string) => (await testApp.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer ps_guess' }, remoteAddress: address })).statusCode
    // 10.0.0.1's window starts first, but it is counted last.
    assert.deepEqual([await guess('10.0.0.1'), await guess('10.0.0.2'), await guess('10.0.0.2'), await guess('10.0.0.1')], [401, 401, 401, 401])
    assert.equal(await guess('10.0.0.3'), 401, 'a third address pushes out the window of 10.0.0.1, which started first')
    assert.equal(await guess('10.0.0.1'), 401, '10.0.0.1 starts a new window')
    assert.equal(await guess('10.0.0.1'), 401)
    assert.equal(await guess('10.0.0.1'), 429, 'and is limited within it')
  })

  test('a key over its limit is admitted again when its one-minute window ends', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '2' }, clock })
    const status = async () => (await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).statusCode
    assert.deepEqual([await status(), await status(), await status()], [200, 200, 429])
    clock.advance(59_000)
    const limited = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.equal(limited.statusCode, 429)
    assert.equal(limited.headers['retry-after'], '1')
    clock.advance(1000)
    const admitted = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.equal(admitted.statusCode, 200)
    assert.equal(admitted.headers.ratelimit, '"default";r=1;t=60')
  })

  test('a window just begun has 60 seconds left, never 61, wherever the process clock is', async (t) => {
    // At this time, a window's end 60,000 ms on, less the time, is a hair over 60,000 in floating point.
    const elapsed = 996523.3694363817
    assert.ok((elapsed + 60_000) - elapsed > 60_000)
    const testApp = await build(t, { store, clock: { now: () => Date.parse('2026-11-23T12:00:00Z'), elapsed: () => elapsed } })
    const first = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.match(String(first.headers.ratelimit), /;t=60$/)
  })

  test('a step of the time of day (NTP, a VM resumed), back or forward, neither freezes a window nor ends it: windows are time elapsed', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '2' }, clock })
    const answer = async () => await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.deepEqual([(await answer()).statusCode, (await answer()).statusCode], [200, 200])
    // A step back of an hour kept the key at 429 for the hour (Retry-After: 3659); a step forward
    // and back again made the next window end a day later.
    for (const step of [-3_600_000, 25 * 3_600_000, -25 * 3_600_000]) {
      clock.step(step)
      const limited = await answer()
      assert.equal(limited.statusCode, 429)
      assert.equal(limited.headers['retry-after'], '60')
    }
    clock.advance(60_000)
    assert.equal((await answer()).statusCode, 200)
  })

  test('RATE_LIMIT_PER_MINUTE=0 turns limiting off', async (t) => {
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '0' } })
    for (let i = 0; i < 5; i++) {
      const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers.ratelimit, undefined)
    }
  })
})

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl) {
  test('with REDIS_URL, instances share one budget per key', async (t) => {
    const { store, db, databaseUrl } = await createTestStore(t)
    // A loaded machine can keep Redis past the 100 ms a request waits for it by default, and the request passes uncounted.
    const config = loadConfig({ DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: redisUrl, REDIS_TIMEOUT_MS: '5000' })
    const instances = [await buildApp({ config, store, limits: TEST_LIMITS }), await buildApp({ config, store, limits: TEST_LIMITS })]
    for (const app of instances) {
      defer(t, () => app.close())
      checkAnswers(t, app)
    }
    const headers = { authorization: `Bearer ${(await createKey(db)).key}` }
    const statuses = []
    for (let i = 0; i < 6; i++) statuses.push((await instances[i % 2]!.inject({ url: '/v1/pets', headers })).statusCode)
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429])
  })

  /** An instance counting 4 a minute in the Redis of TEST_REDIS_URL, and a client of that Redis. */
  const limitedInRedis = async (t: TestContext) => {
    const { store, db, databaseUrl } = await createTestStore(t)
    const config = loadConfig({ DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: redisUrl, REDIS_TIMEOUT_MS: '5000' })
    const app = await buildApp({ config, store, limits: TEST_LIMITS })
    defer(t, () => app.close())
    checkAnswers(t, app)
    // As src/plugins/rate-limit.ts imports it: the one export a bundled CommonJS package has is its default.
    const { default: ioredis } = await import('ioredis')
    const redis = new ioredis.Redis(redisUrl)
    defer(t, () => redis.quit())
    return { app, db, redis, prefix: `petstore:${await findSetting(db, 'installation_id')}:` }
  }

  test('with REDIS_URL, counters are named by the store and what is counted, as operations.md says', async (t) => {
    const { app, db, redis, prefix } = await limitedInRedis(t)
    const { id, key } = await createKey(db)
    await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })
    await app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer ps_not-a-key' }, remoteAddress: '192.0.2.7' })
    const keys = (await redis.keys(`${prefix}*`)).sort()
    const checks = keys.filter((name) => /^permission-check:[\w-]{36}$/.test(name.slice(prefix.length)))
    assert.deepEqual(keys.filter((name) => !checks.includes(name)), [`${prefix}address:192.0.2.7`, `${prefix}key:${id}`])
    assert.equal(checks.length, 1, 'the start made its counts on a key of its own')
    const checkTtl = await redis.pttl(checks[0]!)
    assert.ok(checkTtl > 0 && checkTtl <= 60_000, `the counts made at start expire with their window (${checkTtl} ms left)`)
  })

  // A count whose PEXPIRE Redis refused (an ACL changed for a moment) left its counter without an
  // expiry: the key was refused for good, "retry in 0 s".
  test('with REDIS_URL, a counter found without an expiry is given the window at its next count', async (t) => {
    const { app, db, redis, prefix } = await limitedInRedis(t)
    const { id, key } = await createKey(db)
    const counter = `${prefix}key:${id}`
    await redis.set(counter, '9')
    const response = await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })
    assert.equal(response.statusCode, 429)
    const ttl = await redis.pttl(counter)
    assert.ok(ttl > 55_000 && ttl <= 60_000, `the counter expires with a window (${ttl} ms left)`)
    assert.match(String(response.headers.ratelimit), /;t=(59|60)$/)
  })
}
