import assert from 'node:assert/strict'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { connect } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { createCuttableProxy } from '../cuttable-proxy.js'
import { defer, forEachStore, tempDir, TEST_STORES, waitFor } from '../helper.js'
import { createKey, listAllPets, printedKeys, runCli, startProcess, startServer, startServerOnTerminal, type ServerProcess } from '../process.js'

/** A request on a connection of its own, which the primary hands to the next worker. */
async function send (url: string, options: { method?: string, headers: Record<string, string>, body?: string }): Promise<{ status: number, body: string }> {
  return await new Promise((resolve, reject) => {
    const outgoing = request(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => { resolve({ status: response.statusCode!, body }) })
    })
    outgoing.on('error', reject).end(options.body)
  })
}

/** Resolves once `count` workers have said they listen. */
async function untilListening (server: ServerProcess, count: number): Promise<void> {
  await waitFor(() => (server.output().match(/Server listening at/g) ?? []).length >= count, () => `${count} workers listening in:\n${server.output()}`, { withinMs: 15_000, everyMs: 50 })
}

/** The processes that answered requests, from the request log lines. */
function servingPids (server: ServerProcess): Set<number> {
  return new Set(server.output().split('\n').filter((line) => line.includes('"request completed"')).map((line) => (JSON.parse(line) as { pid: number }).pid))
}

/** The primary's worker processes, as the kernel lists its children. */
function workerPids (server: ServerProcess): number[] {
  return readFileSync(`/proc/${server.child.pid}/task/${server.child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number)
}

/** Whether a process runs: one that has exited but is not reaped yet (a zombie) does not. */
function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

test('WEB_CONCURRENCY=2 on sqlite::memory:, one process\'s own store, is refused as any other configuration is: one line naming both settings, exit 2', async () => {
  const refused = await runCli(['serve'], { WEB_CONCURRENCY: '2', DATABASE_URL: 'sqlite::memory:', PORT: '0', HOST: '127.0.0.1' })
  assert.equal(refused.code, 2, refused.stderr)
  assert.equal(refused.stderr, 'petstore: Invalid configuration: WEB_CONCURRENCY is 2, and DATABASE_URL is sqlite::memory:, one process\'s own store; ' +
  'workers need a store they share: use sqlite:PATH or postgres://..., or WEB_CONCURRENCY=1\n')
})

forEachStore((store) => {
  test('WEB_CONCURRENCY=2 on a terminal: the first key is made and shown once', async (t) => {
    const server = await startServerOnTerminal(t, { DATABASE_URL: await store.databaseUrl(t), WEB_CONCURRENCY: '2' })
    await untilListening(server, 2)
    const keys = printedKeys(server.output())
    assert.equal(keys.length, 1, server.output())
    assert.equal((await send(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${keys[0]}` } })).status, 200)
    assert.equal(await server.stop('SIGTERM'), 0)
  })

  test('WEB_CONCURRENCY=2: two workers on one port, metrics summed over both, a dead worker replaced, one shutdown', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t), WEB_CONCURRENCY: '2', METRICS_PORT: '0', LOG_FORMAT: 'json', LOG_REQUESTS: 'on', WEBHOOK_ALLOW_PRIVATE: 'true' }
    const headers = { authorization: `Bearer ${await createKey(env)}`, 'content-type': 'application/json' }
    const server = await startServer(t, env)
    await untilListening(server, 2)
    // A subscription whose receiver never answers (port 9, discard): every event stays owed to it.
    const webhook = await send(`${server.url}/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['pet.created'] }) })
    assert.equal(webhook.status, 201, webhook.body)

    // Creates on connections of their own, spread over both workers: each acknowledged, none lost.
    const created = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const response = await send(`${server.url}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `Pet ${i}`, categoryId: 1 }) })
      assert.equal(response.status, 201, response.body)
      return (JSON.parse(response.body) as { id: number }).id
    }))
    assert.equal(new Set(created).size, 40)
    assert.deepEqual((await listAllPets(server.url, headers)).map((pet) => pet.id), [...created].sort((x, y) => x - y))
    const workers = servingPids(server)
    assert.equal(workers.size, 2, 'both workers answered')

    const metricsPort = /"port":(\d+)[^\n]*metrics served at/.exec(server.output())![1]!
    const scrape = async () => await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const CREATES = /^http_requests_total\{method="POST",route="\/v1\/pets",status="201"\} 40$/m
    const metrics = await scrape()
    assert.match(metrics, CREATES, 'the creates of both workers, summed')
    assert.match(metrics, /^process_cpu_user_seconds_total \d/m, 'the process metrics of the workers')
    assert.match(metrics, /^petstore_webhook_queue_depth 40$/m, 'the one store\'s depth, not its sum over the workers')

    // A worker that dies is replaced; the service answers meanwhile. Its counts stay in the sums
    // (counters that went down would read as a reset), and a scrape meanwhile is answered at once.
    const [victim] = workers
    process.kill(victim!, 'SIGKILL')
    await new Promise((resolve) => setTimeout(resolve, 100))
    const started = performance.now()
    assert.match(await scrape(), CREATES)
    assert.ok(performance.now() - started < 1000, 'a scrape does not wait for the worker being replaced')
    await untilListening(server, 3)
    assert.match(await scrape(), CREATES)
    const died = JSON.parse(server.output().split('\n').find((line) => line.includes('a worker died'))!)
    assert.equal(died.workerPid, victim, 'the dead worker, apart from the logging process\'s own pid')
    assert.equal(died.signal, 'SIGKILL')
    assert.equal((await send(`${server.url}/v1/pets?limit=1`, { headers })).status, 200)

    assert.equal(await server.stop('SIGTERM'), 0)
    const remaining = [...servingPids(server)].filter(isAlive)
    assert.deepEqual(remaining, [], 'no worker outlives the service')
  })
})

test('WEB_CONCURRENCY=2: a SIGTERM to the whole process group (systemd\'s default) still lets every request in flight finish', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: '2' }
  const key = await createKey(env)
  const server = await startServer(t, env)
  await untilListening(server, 2)
  const authorization = `Bearer ${key}`
  const { port } = new URL(server.url)
  // Creates on connections of their own (spread over both workers), each waiting for the rest of its body.
  const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
  const sockets = await Promise.all(Array.from({ length: 4 }, async () => {
    const socket = connect(Number(port), '127.0.0.1')
    await once(socket, 'connect')
    socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
    let answer = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => { answer += chunk })
    const closed = once(socket, 'close')
    return { socket, answer: async () => { await closed; return answer } }
  }))
  await new Promise((resolve) => setTimeout(resolve, 500)) // the workers have the requests by now

  const workers = workerPids(server)
  assert.equal(workers.length, 2)
  // The group's processes get the signal in no set order: here the workers first, then the primary,
  // which passes on a stop of its own to each.
  for (const pid of workers) process.kill(pid, 'SIGTERM')
  await new Promise((resolve) => setTimeout(resolve, 100))
  process.kill(server.child.pid!, 'SIGTERM')
  await new Promise((resolve) => setTimeout(resolve, 200))
  for (const { socket } of sockets) socket.end(body.slice(5))
  // Each is answered, none dropped. Two workers committing to one SQLite file while one closes it can
  // make a commit wait past the lock's 100 ms on a loaded machine: then a 503 that says so.
  for (const { answer } of sockets) assert.match(await answer(), /^HTTP\/1\.1 (201 |503 [\s\S]*"The store is unavailable; retry later")/)
  const [code] = server.child.exitCode === null ? await once(server.child, 'exit') : [server.child.exitCode]
  assert.equal(code, 0)
})

for (const workers of ['1', '2']) {
  test(`WEB_CONCURRENCY=${workers}: SIGHUP, SIGQUIT and SIGUSR2 stop the service as SIGTERM does (the primary of workers died of them at once)`, async (t) => {
    for (const signal of ['SIGHUP', 'SIGQUIT', 'SIGUSR2'] as const) {
      const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: workers, LOG_FORMAT: 'json' })
      assert.equal(await server.stop(signal), 0, `${signal}: ${server.output()}`)
      assert.match(server.output(), /"msg":"shutting down/, signal)
    }
  })
}

test('WEB_CONCURRENCY=2: a second SIGTERM to the primary stops at once, as in one process: the workers are killed and it exits 1', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: '2', LOG_FORMAT: 'json' }
  const key = await createKey(env)
  const server = await startServer(t, env)
  await untilListening(server, 2)
  const authorization = `Bearer ${key}`
  const { port } = new URL(server.url)
  // A create whose body never comes holds its worker's shutdown for the grace period (10 s by default).
  const socket = connect(Number(port), '127.0.0.1')
  defer(t, () => socket.destroy())
  await once(socket, 'connect')
  socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`)
  await new Promise((resolve) => setTimeout(resolve, 300))
  const workers = workerPids(server)
  assert.equal(workers.length, 2)

  process.kill(server.child.pid!, 'SIGTERM')
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal(server.child.exitCode, null, 'the first signal waits for the request in flight')
  const started = performance.now()
  process.kill(server.child.pid!, 'SIGTERM')
  const [code] = server.child.exitCode === null ? await once(server.child, 'exit') : [server.child.exitCode]
  assert.equal(code, 1)
  assert.ok(performance.now() - started < 2000, `exited ${Math.round(performance.now() - started)} ms after the second signal`)
  assert.match(server.output(), /second SIGTERM: the workers are killed/)
  for (let tries = 0; workers.some(isAlive) && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.deepEqual(workers.filter(isAlive), [], 'no worker outlives the primary')
})

test('WEB_CONCURRENCY=2: a SIGTERM to the primary while its workers start stops them once they listen, at once, and exits 0', async (t) => {
  const server = await startProcess(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: '2', LOG_FORMAT: 'json' }, /"msg":"starting workers"/)
  const signalled = performance.now()
  assert.equal(await server.stop('SIGTERM'), 0, server.output())
  // Their stop message was lost, and they served until killed, 11 s later.
  assert.ok(performance.now() - signalled < 5000, `exited ${Math.round(performance.now() - signalled)} ms after the signal`)
})

test('WEB_CONCURRENCY=2: a shutdown that a worker could not finish within its grace (SHUTDOWN_GRACE_MS) exits 1, as one process does', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: '2', LOG_FORMAT: 'json', SHUTDOWN_GRACE_MS: '1000' }
  const key = await createKey(env)
  const server = await startServer(t, env)
  await untilListening(server, 2)
  const authorization = `Bearer ${key}`
  // A create whose body never comes holds its worker's shutdown for the grace period.
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
  defer(t, () => socket.destroy())
  await once(socket, 'connect')
  socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`)
  await new Promise((resolve) => setTimeout(resolve, 300))
  const stopping = performance.now()
  assert.equal(await server.stop(), 1)
  assert.match(server.output(), /shutdown not finished within 1 s/)
  assert.ok(performance.now() - stopping < 5000, `stopped ${Math.round(performance.now() - stopping)} ms after the signal`)
})

test('WEB_CONCURRENCY=2: a worker that cannot exit by itself (frozen) is killed a second past SHUTDOWN_GRACE_MS, and the primary exits 1', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: '2', LOG_FORMAT: 'json', SHUTDOWN_GRACE_MS: '1' })
  await untilListening(server, 2)
  const workers = workerPids(server)
  assert.equal(workers.length, 2)
  process.kill(workers[0]!, 'SIGSTOP')
  defer(t, () => { if (isAlive(workers[0]!)) process.kill(workers[0]!, 'SIGKILL') })
  const stopping = performance.now()
  assert.equal(await server.stop(), 1)
  assert.ok(performance.now() - stopping < 5000, `stopped ${Math.round(performance.now() - stopping)} ms after the signal`)
  assert.match(server.output(), /"graceMs":1,"killedAfterMs":1001,.*workers not finished within 1\.001 s \(SHUTDOWN_GRACE_MS and a second\) are killed/)
  for (let tries = 0; workers.some(isAlive) && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.deepEqual(workers.filter(isAlive), [], 'no worker outlives the primary')
})

test('WEB_CONCURRENCY=2: a worker that died just before a SIGTERM is not started again: the new one served while the service stopped, and died with it', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: '2', LOG_FORMAT: 'json', SHUTDOWN_GRACE_MS: '8000' })
  await untilListening(server, 2)
  const [victim, frozen] = workerPids(server)
  process.kill(victim!, 'SIGKILL')
  for (const deadline = Date.now() + 5000; !server.output().includes('a worker died') && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 10))
  // A worker that cannot finish holds the stop well past the restart's delay (a second).
  process.kill(frozen!, 'SIGSTOP')
  defer(t, () => { if (isAlive(frozen!)) process.kill(frozen!, 'SIGKILL') })
  const exited = server.stop()
  for (const deadline = Date.now() + 4000; workerPids(server).length < 2 && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 50))
  assert.deepEqual(workerPids(server), [frozen], server.output())
  process.kill(frozen!, 'SIGKILL')
  assert.equal(await exited, 1, 'a worker that did not finish')
})

test('WEB_CONCURRENCY=2: one SIGTERM sent to the primary and to its group (as timeout(1) sends it) is one, and lets the request in flight finish', async (t) => {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: '2', LOG_FORMAT: 'json' }
  const key = await createKey(env)
  const server = await startServer(t, env)
  await untilListening(server, 2)
  const authorization = `Bearer ${key}`
  const { port } = new URL(server.url)
  const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
  const socket = connect(Number(port), '127.0.0.1')
  defer(t, () => socket.destroy())
  await once(socket, 'connect')
  socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { answer += chunk })
  await new Promise((resolve) => setTimeout(resolve, 300))

  // The copies a process group's signal brings come apart by microseconds to milliseconds: here 10,
  // waited for without a timer, which a loaded machine could make late past the 100 ms that count as one.
  process.kill(server.child.pid!, 'SIGTERM')
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)
  process.kill(server.child.pid!, 'SIGTERM')
  await new Promise((resolve) => setTimeout(resolve, 200))
  socket.end(body.slice(5))
  const [code] = server.child.exitCode === null ? await once(server.child, 'exit') : [server.child.exitCode]
  assert.doesNotMatch(server.output(), /second SIGTERM/) // first: a copy taken for a second signal exits 1
  assert.equal(code, 0, server.output())
  assert.match(answer, /^HTTP\/1\.1 201 /)
})

for (const store of TEST_STORES.filter((candidate) => candidate.name === 'postgres')) {
  test('WEB_CONCURRENCY=2 on PostgreSQL: a worker that dies while the database is unreachable is replaced once it is back; the service stays up meanwhile, its webhook queue depth unknown', async (t) => {
    const direct = new URL(await store.databaseUrl(t))
    const proxy = await createCuttableProxy(direct)
    defer(t, () => proxy.close())
    const env = { DATABASE_URL: proxy.url, WEB_CONCURRENCY: '2', LOG_FORMAT: 'json', DATABASE_CONNECT_TIMEOUT_MS: '500', METRICS_PORT: '0' }
    const key = await createKey(env)
    const server = await startServer(t, env)
    await untilListening(server, 2)
    const headers = { authorization: `Bearer ${key}` }

    proxy.cut()
    const [victim] = workerPids(server)
    process.kill(victim!, 'SIGKILL')
    // Its replacement fails to start meanwhile (it reads settings from the store): the other worker answers.
    await waitFor(() => server.output().includes('a worker failed to start') || server.child.exitCode !== null, server.output, { withinMs: 15_000, everyMs: 50 })
    assert.equal(server.child.exitCode, null, `the service is up:\n${server.output()}`)
    // Why, in a log line of the worker's own: its stderr line named no process, and the primary's no cause.
    const couldNotStart = server.output().split('\n').find((line) => line.includes('"msg":"this worker could not start"'))
    assert.ok(couldNotStart !== undefined, server.output())
    assert.match(couldNotStart, /"level":50,.*"err":\{[^]*"message":"[^"]+"/)
    assert.equal((await send(`${server.url}/v1/pets`, { headers })).status, 503)
    // The worker's NaN, not 0 (JSON, the workers' channel by default, sends NaN as null, which was
    // read as 0): a backlog's alert would have cleared for the outage.
    // Scraped again should a loaded machine keep the worker's answer past the primary's wait.
    const metricsPort = /"port":(\d+)[^\n]*metrics served at/.exec(server.output())![1]!
    let depth = ''
    for (let scrape = 0; scrape < 5 && !/nan/i.test(depth); scrape++) {
      depth = /^petstore_webhook_queue_depth .*$/m.exec(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())?.[0] ?? ''
    }
    assert.match(depth, /^petstore_webhook_queue_depth nan$/i)

    proxy.restore()
    await untilListening(server, 3)
    assert.equal((await send(`${server.url}/v1/pets`, { headers })).status, 200)
    assert.equal(await server.stop('SIGTERM'), 0)
  })
}

if (process.env.TEST_REDIS_URL !== undefined) {
  test('WEB_CONCURRENCY=2 with REDIS_URL: the rate limit holds per key across the workers', async (t) => {
    const env = {
      DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`,
      WEB_CONCURRENCY: '2',
      REDIS_URL: process.env.TEST_REDIS_URL,
      // Past the default 100 ms, which a loaded machine can take, a request would pass uncounted.
      REDIS_TIMEOUT_MS: '5000',
      RATE_LIMIT_PER_MINUTE: '6',
      LOG_FORMAT: 'json',
      LOG_REQUESTS: 'on'
    }
    const key = await createKey(env)
    const server = await startServer(t, env)
    await untilListening(server, 2)
    const headers = { authorization: `Bearer ${key}` }
    const statuses = []
    for (let i = 0; i < 10; i++) statuses.push((await send(`${server.url}/v1/pets`, { headers })).status)
    assert.equal(servingPids(server).size, 2, 'both workers answered')
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429, 429, 429, 429])
  })
}
