import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import { test, type TestContext } from 'node:test'
import { buildApp } from '../../src/app.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { createLogger } from '../../src/logger.js'
import { REDIS_COOL_DOWN_MS } from '../../src/plugins/rate-limit.js'
import { build, createKey, createTestStore, defer, manualClock, TEST_LIMITS } from '../helper.js'

/**
 * A Redis of the test's own on a spare port, so that it can be frozen without touching anyone else's.
 * Ports are drawn below Linux's ephemeral range (32768 and up), where no client socket takes one; a
 * port some server holds makes redis-server exit, and another is drawn (a few times at most). The
 * one that answers must be ours: its `process_id` is checked.
 */
async function startRedis (t: TestContext, settings: string[] = []): Promise<{ url: string, pid: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...settings], { stdio: 'ignore' })
    const exited = once(redis, 'exit')
    exited.catch(() => {}) // a spawn error also fails the wait below
    defer(t, async () => {
      redis.kill('SIGCONT')
      redis.kill('SIGKILL')
      if (redis.exitCode === null && redis.signalCode === null) await exited
    })
    // On a loaded machine the start can take seconds; the timeout of the test bounds the wait.
    while (redis.exitCode === null && redis.pid !== undefined) {
      if (await redisPid(port, settings) === redis.pid) return { url: `redis://127.0.0.1:${port}`, pid: redis.pid }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    if (attempt === 5) throw new Error(`redis-server did not start (exit code ${redis.exitCode})`)
  }
}

/** The process id of the Redis answering on `port`, if one answers within a second. */
async function redisPid (port: number, settings: string[]): Promise<number | undefined> {
  const socket = connect(port, '127.0.0.1')
  socket.setTimeout(1000)
  const password = settings[settings.indexOf('--requirepass') + 1]
  const pid = await new Promise<number | undefined>((resolve) => {
    let answer = ''
    socket.once('connect', () => socket.write(`${settings.includes('--requirepass') ? `AUTH ${password}\r\n` : ''}INFO server\r\n`))
    socket.on('data', (data) => {
      answer += String(data)
      const match = /process_id:(\d+)/.exec(answer)
      if (match) resolve(Number(match[1]))
    })
    socket.once('timeout', () => { resolve(undefined) })
    socket.once('error', () => { resolve(undefined) })
  })
  socket.destroy()
  return pid
}

/** What Redis answers to `commands` (RESP inline commands) on a connection that ends with them. */
async function redisCommands (port: string, commands: string): Promise<string> {
  const socket = connect(Number(port), '127.0.0.1')
  let answer = ''
  socket.on('data', (data) => { answer += String(data) })
  socket.end(commands)
  await once(socket, 'close')
  return answer
}

// CI sets TEST_REDIS_URL where redis-server is installed.
if (process.env.TEST_REDIS_URL) {
  test('a Redis that refuses REDIS_URL\'s password stops the start, in Redis\'s words, without the password (it served every request unlimited)', async (t) => {
    const redis = await startRedis(t, ['--requirepass', 'right-secret'])
    const { store, databaseUrl } = await createTestStore(t)
    const lines: string[] = []
    const logger = createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { lines.push(String(line)); done() } }))
    for (const password of ['wrong-secret', '']) {
      const url = new URL(redis.url)
      url.password = password
      const started = performance.now()
      const failed = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, REDIS_URL: url.toString() }), store, logger, limits: TEST_LIMITS }).then(() => undefined, (error: unknown) => error)
      assert.ok(failed instanceof ConfigError, String(failed))
      const refusal = password === '' ? 'NOAUTH Authentication required.' : 'WRONGPASS invalid username-password pair or user is disabled.'
      assert.equal(failed.message, `Invalid configuration: the Redis server refuses REDIS_URL's user or password (${refusal})`)
      assert.ok(performance.now() - started < 1500, 'without waiting out the 2 s a Redis has to answer at start')
    }
    assert.ok(!lines.join('').includes('wrong-secret'), 'the password is in a log line')
  })

  test('a Redis that refuses the password once the service runs is logged without it: ioredis\'s error holds the AUTH command\'s arguments', async (t) => {
    const redis = await startRedis(t, ['--requirepass', 'right-secret'])
    const { store, databaseUrl } = await createTestStore(t)
    const lines: string[] = []
    const logger = createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { lines.push(String(line)); done() } }))
    const url = new URL(redis.url)
    url.password = 'right-secret'
    const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, REDIS_URL: url.toString() }), store, logger, limits: TEST_LIMITS })
    defer(t, () => app.close())
    const get = async () => await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${(await createKey(store.db)).key}` } })
    assert.equal((await get()).headers.ratelimit, '"default";r=599;t=60', 'counted in Redis')
    // The password changed on the server, and the connection lost: ioredis connects again with the old
    // one, which Redis's ACL log records (refused), before the next request fails.
    await redisCommands(url.port, 'AUTH right-secret\r\nCONFIG SET requirepass new-secret\r\nCLIENT KILL TYPE normal\r\n')
    while (!(await redisCommands(url.port, 'AUTH new-secret\r\nACL LOG\r\nQUIT\r\n')).includes('auth')) await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal((await get()).statusCode, 200, 'Redis fails open')
    const failed = lines.find((line) => line.includes('rate-limit store (Redis) failed'))
    assert.match(failed ?? '', /WRONGPASS/, 'the refusal is logged')
    // Once, as an error: unlike an outage, it ends only when REDIS_URL is set right.
    assert.equal(lines.filter((line) => line.includes('"level":50') && line.includes("the Redis server refuses REDIS_URL's user or password")).length, 1)
    assert.ok(!lines.join('').includes('right-secret'), `the password is in a log line: ${failed}`)
  })

  test('a Redis user whose ACL forbids the counts stops the start, in Redis\'s words: it served every request unlimited, with a warning every 10 s', async (t) => {
    const redis = await startRedis(t)
    const { store, databaseUrl } = await createTestStore(t)
    const port = new URL(redis.url).port
    // Each lacks one thing a count may use: a way to run the script, a command it calls, the service's keys.
    const users = {
      'no-eval': ['+@all', '-eval'],
      'no-evalsha': ['+@all', '-evalsha'],
      'no-incr': ['+@all', '-incr'],
      'no-pexpire': ['+@all', '-pexpire'],
      'no-pttl': ['+@all', '-pttl'],
      'other-keys': ['+@all', 'resetkeys', '~other:*']
    }
    await redisCommands(port, Object.entries(users).map(([name, rules]) => `ACL SETUSER ${name} on >user-secret ~* ${rules.join(' ')}\r\n`).join(''))
    const logger = createLogger('info', 'json', new Writable({ write: (_line, _encoding, done) => { done() } }))
    for (const name of Object.keys(users)) {
      // Twice: each start checks on a key of its own, and each must be refused.
      for (let start = 1; start <= 2; start++) {
        const failed = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, REDIS_URL: `redis://${name}:user-secret@127.0.0.1:${port}` }), store, logger, limits: TEST_LIMITS })
          .then(async (app) => { await app.close() }, (error: unknown) => error)
        assert.ok(failed instanceof ConfigError, `${name}, start ${start}: ${String(failed)}`)
        // Redis's own words differ from version to version (7.2 names the user): only their kind is checked.
        assert.match(failed.message, /^Invalid configuration: the Redis server does not let REDIS_URL's user count requests \(.*(NOPERM |The user executing the script can't run).*\); it needs EVAL, EVALSHA, INCR, PEXPIRE and PTTL on the keys petstore:[\w-]+:\*$/, name)
        assert.ok(!failed.message.includes('user-secret'), failed.message)
      }
    }
    // A count refused halfway (after INCR) left its key, without an expiry where PEXPIRE was refused.
    assert.equal(await redisCommands(port, 'KEYS *permission-check:*\r\nQUIT\r\n'), '*0\r\n+OK\r\n', 'a refused start\'s key is left')
    // The default user, which may do all of it, starts.
    const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, REDIS_URL: redis.url }), store, logger, limits: TEST_LIMITS })
    await app.close()
  })

  test('a read-only replica as REDIS_URL is an outage, not a fault of the setting: the start warns in Redis\'s words, and requests pass uncounted', async (t) => {
    const primary = await startRedis(t)
    const replica = await startRedis(t, ['--replicaof', '127.0.0.1', new URL(primary.url).port])
    const lines: string[] = []
    const logger = createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { lines.push(String(line)); done() } }))
    const testApp = await build(t, { env: { REDIS_URL: replica.url }, logger })
    const warning = lines.find((line) => line.includes('rate-limit store (Redis) cannot be used at start'))
    assert.match(warning ?? '', /READONLY/, lines.join(''))
    const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.equal(response.statusCode, 200)
    assert.equal(response.headers.ratelimit, undefined, 'not counted')
  })

  test('a REDIS_URL naming a database the server does not have stops the start, naming it: its counters went to database 0', async (t) => {
    const { store, databaseUrl } = await createTestStore(t)
    const url = new URL(process.env.TEST_REDIS_URL!)
    url.pathname = '/99'
    const logger = createLogger('info', 'json', new Writable({ write: (_line, _encoding, done) => { done() } }))
    await assert.rejects(buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, REDIS_URL: url.toString() }), store, logger, limits: TEST_LIMITS }), {
      name: 'ConfigError',
      message: 'Invalid configuration: REDIS_URL names database 99, which the Redis server does not have (ERR DB index is out of range)'
    })
  })

  test('a frozen Redis costs one short wait, then requests pass uncounted until it answers again', { timeout: 30_000 }, async (t) => {
    const redis = await startRedis(t)
    const clock = manualClock()
    // Longer than the default 100 ms, so that the wait shows the setting is what bounds it.
    const timeoutMs = 250
    const testApp = await build(t, { env: { REDIS_URL: redis.url, RATE_LIMIT_PER_MINUTE: '2', REDIS_TIMEOUT_MS: String(timeoutMs) }, clock })
    const get = async () => {
      const started = performance.now()
      const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
      return { status: response.statusCode, limit: response.headers.ratelimit, ms: performance.now() - started }
    }
    const counted = await get()
    assert.equal(counted.status, 200)
    assert.equal(counted.limit, '"default";r=1;t=60')

    process.kill(redis.pid, 'SIGSTOP')
    const first = await get()
    assert.equal(first.status, 200)
    assert.equal(first.limit, undefined, 'not counted')
    assert.ok(first.ms >= timeoutMs - 5 && first.ms < timeoutMs + 400, `answered after ${first.ms} ms`)
    for (let i = 0; i < 5; i++) {
      const next = await get()
      assert.equal(next.status, 200, 'past the limit of 2, uncounted requests pass')
      assert.ok(next.ms < timeoutMs, `no wait during the cool-down: ${next.ms} ms`)
    }
    assert.equal((await testApp.app.inject({ url: '/readyz' })).statusCode, 200, 'ready: Redis fails open')

    process.kill(redis.pid, 'SIGCONT')
    clock.advance(REDIS_COOL_DOWN_MS)
    await new Promise((resolve) => setTimeout(resolve, 50)) // the answers Redis owed arrive and are dropped
    // Counted again: the key's third request in the window, as the count Redis owed for the request
    // that timed out was applied when it thawed (that request did pass).
    const resumed = await get()
    assert.equal(resumed.status, 429)
    assert.equal(resumed.limit, '"default";r=0;t=60')
  })
}

test('a Redis that cannot be reached is logged with the connection\'s own error, not the command\'s "stream isn\'t writeable"', async (t) => {
  // A port nothing listens on: taken, then let go.
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  const { store, databaseUrl } = await createTestStore(t)
  const lines: Array<{ level: number, msg: string, err?: { message: string } }> = []
  const logger = createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { lines.push(JSON.parse(String(line))); done() } }))
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, REDIS_URL: `redis://127.0.0.1:${port}` }), store, logger, limits: TEST_LIMITS })
  defer(t, () => app.close())
  const warnings = () => lines.filter((line) => line.msg.startsWith('rate-limit store (Redis)'))
  // Said at start, before any request finds it out.
  assert.equal(warnings().length, 1, JSON.stringify(lines))
  assert.equal(warnings()[0]!.msg, 'rate-limit store (Redis) cannot be used at start: requests are not limited until it answers')
  assert.equal(warnings()[0]!.level, 40)
  assert.match(warnings()[0]!.err?.message ?? '', new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`))
  const response = await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${(await createKey(store.db)).key}` } })
  assert.equal(response.statusCode, 200, 'Redis fails open')
  assert.equal(warnings().length, 1, 'one warning an outage')
})

test('REDIS_URL asking for TLS (rediss://) of a server that does not speak it: the start\'s warning says what the timeout may mean', async (t) => {
  // As a plain Redis does with a TLS hello, which holds no line end: reads it and waits for more.
  const sockets = new Set<Socket>()
  const server = createServer((socket) => { sockets.add(socket); socket.resume() }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  defer(t, () => { for (const socket of sockets) socket.destroy(); server.close() })
  const { port } = server.address() as AddressInfo
  const { store, databaseUrl } = await createTestStore(t)
  const lines: Array<{ msg: string, err?: { message: string } }> = []
  const logger = createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { lines.push(JSON.parse(String(line))); done() } }))
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, REDIS_URL: `rediss://127.0.0.1:${port}` }), store, logger, limits: TEST_LIMITS })
  defer(t, () => app.close())
  const warning = lines.find((line) => line.msg.startsWith('rate-limit store (Redis) cannot be used at start'))
  assert.ok(warning !== undefined, JSON.stringify(lines))
  assert.match(warning.err?.message ?? '', /ETIMEDOUT/)
  assert.match(warning.msg, /REDIS_URL asks for TLS \(rediss:\/\/\): a server that does not speak it lets the connection time out/)
})
