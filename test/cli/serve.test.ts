import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, closeSync, openSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, request as httpRequest } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { defer, forEachStore, tempDir, TEST_STORES, waitFor } from '../helper.js'
import { CLI, createKey, isRunning, printedKeys, runCli, startProcess, startServer, startServerOnTerminal, type ServerProcess } from '../process.js'

forEachStore((store) => {
  test('the first start on a terminal prints one key; a restart prints none and keeps every pet', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const first = await startServerOnTerminal(t, env)
    const [key] = printedKeys(first.output())
    assert.ok(key, first.output())
    // The servers of the tests listen on PORT=0, which the system replaces: the banner printed :0.
    assert.match(first.output(), /^Call the API with: {2}curl -H "Authorization: Bearer <key>" http:\/\/localhost:<port>\/v1\/pets\r$/m)
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const created = await fetch(`${first.url}/v1/pets`, { method: 'POST', headers, body: '{"name":"Rex","categoryId":9007199254740993}' })
    assert.equal(created.status, 201)
    const pet = await created.text()
    assert.equal(await first.stop('SIGTERM'), 0)

    const second = await startServerOnTerminal(t, env)
    assert.deepEqual(printedKeys(second.output()), [])
    const fetched = await fetch(`${second.url}/v1/pets`, { headers })
    assert.equal(await fetched.text(), `[${pet}]`)
    assert.equal(await second.stop('SIGINT'), 0)
  })

  test('a start whose output is not a terminal (a log collector would keep the key) makes no key and logs how to make one; a later start on a terminal makes it', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t), LOG_FORMAT: 'json' }
    const logged = await startServer(t, env)
    assert.deepEqual(printedKeys(logged.output()), [])
    assert.doesNotMatch(logged.output(), /ps_/)
    const hint = logged.output().split('\n').find((line) => line.includes('no API key'))
    assert.ok(hint, logged.output())
    assert.match(JSON.parse(hint).msg, /^this store has no API key: make one with `\/\S+ keys create --name NAME`, run with this service's settings \(its DATABASE_URL\)/)
    assert.equal(await logged.stop('SIGTERM'), 0)

    const onTerminal = await startServerOnTerminal(t, env)
    assert.equal(printedKeys(onTerminal.output()).length, 1, onTerminal.output())
    assert.equal(await onTerminal.stop('SIGTERM'), 0)
    const again = await startServer(t, env)
    assert.doesNotMatch(again.output(), /no API key/, 'a store with a key is not told to make one')
  })

  test('a service whose terminal goes away (closed, a dropped ssh session) stops and exits: it spun at a full core for good, caught in a fault it handled', async (t) => {
    const server = await startServerOnTerminal(t, { DATABASE_URL: await store.databaseUrl(t) })
    server.child.kill('SIGKILL') // script, which holds the terminal: the service gets SIGHUP, and its output fails
    await waitFor(() => !isRunning(server.pid), () => 'the service, still running after its terminal went', { withinMs: 10_000, everyMs: 50 })
  })

  for (const format of ['json', 'pretty']) {
    test(`a service whose terminal is paused (Ctrl-S, an ssh session that stalls) stops on SIGTERM: its log's writes waited for good, and its exit for them (LOG_FORMAT=${format})`, async (t) => {
      const server = await startServerOnTerminal(t, { DATABASE_URL: await store.databaseUrl(t), LOG_REQUESTS: 'on', LOG_FORMAT: format })
      server.child.stdin!.write('\x13') // XOFF: the terminal's output stops
      await new Promise((resolve) => setTimeout(resolve, 100))
      for (let i = 0; i < 10; i++) await fetch(`${server.url}/healthz`)
      const exited = server.stop('SIGTERM')
      const outcome = await Promise.race([exited, sleep(10_000).then(() => 'still running 10 s after SIGTERM')])
      server.child.stdin!.write('\x11') // XON, for the test's own cleanup
      assert.equal(outcome, 0)
    })
  }

  test('SIGTERM ends open event streams at once and exits 0', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const key = await createKey(env)
    const server = await startServer(t, env)
    const stream = await fetch(`${server.url}/v1/events/stream`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(stream.status, 200)
    const read = stream.text() // resolves when the server ends the stream
    const started = Date.now()
    assert.equal(await server.stop('SIGTERM'), 0)
    assert.match(await read, /^: connected\n\n/)
    assert.ok(Date.now() - started < 2000, `stopped in ${Date.now() - started} ms`)
  })

  test('a key revoked with the CLI is refused by a running server within 2 seconds (its cache), as the README and the CLI say', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const server = await startServer(t, env)
    const created = await runCli(['keys', 'create', '--name', 'doomed'], env)
    const key = created.stdout.trimEnd().split('\n').at(-1)!
    const id = /Created API key (\d+)/.exec(created.stdout)![1]!
    const headers = { authorization: `Bearer ${key}` }
    assert.equal((await fetch(`${server.url}/v1/pets`, { headers })).status, 200, 'a new key works at once')

    assert.equal((await runCli(['keys', 'revoke', id], env)).code, 0)
    const revokedAt = Date.now()
    let status = 200
    while (status === 200 && Date.now() - revokedAt < 4000) {
      status = (await fetch(`${server.url}/v1/pets`, { headers })).status
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal(status, 401)
    // 2 s of cache, plus a poll's 100 ms and a loaded machine's latency.
    assert.ok(Date.now() - revokedAt < 3000, `refused after ${Date.now() - revokedAt} ms`)
    assert.match((await runCli(['keys', 'revoke', '--help'], env)).stdout, /refuse it within 2 seconds/)
  })

  test('SIGTERM lets in-flight requests finish, each with its 201, and exits 0', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t), LOG_LEVEL: 'debug' }
    const key = await createKey(env)
    const server = await startServer(t, env)
    const { port } = new URL(server.url)
    // Each request is in flight when SIGTERM comes: its headers are in, half of its body is still to come.
    const requests = Array.from({ length: 10 }, (_, i) => {
      const body = JSON.stringify({ name: `Pet ${i}`, categoryId: 1 })
      const request = httpRequest({
        host: '127.0.0.1', port, method: 'POST', path: '/v1/pets', agent: false,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
      })
      const answer = new Promise<{ status: number | undefined, body: string }>((resolve, reject) => {
        request.on('response', (response) => {
          let text = ''
          response.on('data', (chunk) => { text += chunk })
          response.on('end', () => resolve({ status: response.statusCode, body: text }))
        })
        request.on('error', reject)
      })
      request.write(body.slice(0, 10))
      return { finish: () => request.end(body.slice(10)), answer }
    })
    const arrived = () => server.output().split('"msg":"incoming request"').length - 1
    while (arrived() < requests.length) await new Promise((resolve) => setTimeout(resolve, 10))

    const exited = server.stop('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.equal(server.child.exitCode, null, 'the server waits for its requests')
    for (const request of requests) request.finish()
    const answers = await Promise.all(requests.map(({ answer }) => answer))
    assert.deepEqual(answers.map(({ status }) => status), Array(requests.length).fill(201))
    assert.equal(await exited, 0)

    const restarted = await startServer(t, env)
    const stored = await (await fetch(`${restarted.url}/v1/pets?limit=100`, { headers: { authorization: `Bearer ${key}` } })).json() as unknown[]
    assert.deepEqual(new Set(stored.map((pet) => JSON.stringify(pet))), new Set(answers.map(({ body }) => body)))
  })

  test('npm start (the bundled build) serves the API and /docs with its files, and stops with exit 0 on SIGTERM', async (t) => {
    // Strict, so that on SQLite creates go through the bundled writer thread (a 500 if it were missing).
    const env = { DATABASE_URL: await store.databaseUrl(t), DURABILITY: 'strict' }
    const headers = { authorization: `Bearer ${await createKey(env)}`, 'content-type': 'application/json' }
    const server = await startServer(t, env, ['npm', 'start', '--silent'])
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
    const created = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers, body: '{"name":"Rex","categoryId":1}' })
    assert.equal(created.status, 201)
    const pet = await created.json() as { id: number }
    assert.deepEqual(await (await fetch(`${server.url}/v1/pets/${pet.id}`, { headers })).json(), pet)
    // Swagger UI serves the files of its own package: the bundle must still find them.
    const docs = await (await fetch(`${server.url}/docs`)).text()
    const assets = [...docs.matchAll(/(?:src|href)="(\/docs\/static\/[^"]+)"/g)].map(([, path]) => path!)
    assert.ok(assets.length >= 3, docs)
    for (const asset of assets) assert.equal((await fetch(server.url + asset)).status, 200, asset)
    assert.equal(await server.stop('SIGTERM'), 0)
    assert.doesNotMatch(server.output(), /writer thread failed/)
  })
})

for (const workers of ['1', '2']) {
  test(`WEB_CONCURRENCY=${workers}: a SIGTERM while the service starts (the store opening and migrating) is held, and acted on once it can stop gracefully: exit 0, said in the log (it was killed at once, silently, with 143)`, async (t) => {
    const server = await startProcess(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, WEB_CONCURRENCY: workers, LOG_FORMAT: 'json' }, /"msg":"starting petstore/)
    assert.equal(await server.stop('SIGTERM'), 0, server.output())
    assert.match(server.output(), /"msg":"shutting down/)
  })
}

/**
 * A service (JSON log) with a create in flight: its head and the body's first byte sent, the rest
 * (`send`) left to the test; `received`, what came back on its connection.
 */
async function serverWithCreateInFlight (t: TestContext, body: string): Promise<{ server: ServerProcess, send: () => void, received: () => string }> {
  const env = { DATABASE_URL: `sqlite:${tempDir(t)}/petstore.db`, LOG_FORMAT: 'json' }
  const key = await createKey(env)
  const server = await startServer(t, env)
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
  t.after(() => socket.destroy())
  await once(socket, 'connect')
  let received = ''
  socket.on('data', (chunk) => { received += chunk })
  socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body[0]}`)
  await sleep(300)
  return { server, send: () => { socket.write(body.slice(1)) }, received: () => received }
}

test('a second SIGTERM exits 1 at once, and says why in a line of the log (JSON, as every other), not on stderr', async (t) => {
  // A create whose body never comes holds the shutdown for its grace (10 s).
  const { server } = await serverWithCreateInFlight(t, `{${' '.repeat(99)}`)
  server.child.kill('SIGTERM')
  await sleep(300)
  assert.equal(server.child.exitCode, null, 'the first signal waits for the request in flight')
  server.child.kill('SIGTERM')
  const [code] = server.child.exitCode === null ? await once(server.child, 'exit') : [server.child.exitCode]
  assert.equal(code, 1)
  const line = server.output().split('\n').find((text) => text.includes('second SIGTERM'))
  assert.ok(line !== undefined, server.output())
  assert.deepEqual((({ level, signal, msg }) => ({ level, signal, msg }))(JSON.parse(line) as Record<string, unknown>),
    { level: 50, signal: 'SIGTERM', msg: 'second SIGTERM: exiting at once, without the requests in flight' })
})

test('two copies of one signal (sent to the process and its group, as npm start forwards Ctrl-C) are one stop: the request in flight gets its 201, exit 0', async (t) => {
  const { server, send, received } = await serverWithCreateInFlight(t, '{"name":"Rex","categoryId":1}')
  // npm's copy came 3 ms after the first: the service exited at once, without the request.
  server.child.kill('SIGINT')
  await sleep(20)
  server.child.kill('SIGINT')
  await sleep(300)
  assert.equal(server.child.exitCode, null, server.output())
  send()
  const [code] = await once(server.child, 'exit')
  assert.equal(code, 0, server.output())
  assert.match(received(), /^HTTP\/1\.1 201 /)
  assert.doesNotMatch(server.output(), /second SIGINT/)
})

test('a process out of file descriptors (idle connections past its open-file limit) stays up, and serves once they close', async (t) => {
  const serve = `ulimit -n 200 && exec ${[process.execPath, ...CLI].map((part) => `'${part}'`).join(' ')} serve`
  const server = await startServer(t, { DATABASE_URL: `sqlite:${tempDir(t)}/petstore.db` }, ['bash', '-c', serve])
  const { port } = new URL(server.url)
  const sockets: Socket[] = []
  t.after(() => { for (const socket of sockets) socket.destroy() })
  for (let i = 0; i < 250; i++) {
    const socket = connect(Number(port), '127.0.0.1')
    socket.on('error', () => {})
    sockets.push(socket)
  }
  await Promise.all(sockets.map(async (socket) => { await Promise.race([once(socket, 'connect'), once(socket, 'close')]) }))
  // Two of the load sampler's intervals (500 ms at the default limit) with every descriptor taken.
  await sleep(1000)
  assert.equal(server.child.exitCode, null, `the process ended:\n${server.output()}`)
  assert.match(server.output(), /the open-file limit \(200\) is below the 4096 connections an instance may hold and its other files: past it, new connections are closed at once; raise it to 4352 or more/)
  for (const socket of sockets) socket.destroy()
  await sleep(100)
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
  assert.equal(await server.stop('SIGTERM'), 0)
})

test('a log that cannot be written (a full disk) costs its lines, never the service: it serves, says so on stderr, and stops on SIGTERM', async (t) => {
  const dir = tempDir(t)
  const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'store.db')}`, HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_FORMAT: 'json', LOG_REQUESTS: 'on' }
  const key = (await runCli(['keys', 'create', '--name', 'a'], env)).stdout.trimEnd().split('\n').at(-1)!
  // A port found free: with PORT=0 the port would be known only from the log, which is lost.
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  probe.close()
  const full = openSync('/dev/full', 'w')
  const child = spawn(process.execPath, [...CLI, 'serve'], { env: { ...env, PORT: String(port) }, stdio: ['ignore', full, 'pipe'] })
  closeSync(full)
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const exited = once(child, 'exit')
  let served = 0
  for (const deadline = Date.now() + 10_000; served < 20 && Date.now() < deadline;) {
    const response = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(2000) }).catch(() => undefined)
    if (response?.status === 200) served++
    else await sleep(50)
  }
  assert.equal(served, 20, stderr)
  assert.equal(child.exitCode, null, 'it runs')
  assert.match(stderr, /the log cannot be written \(ENOSPC/)
  child.kill('SIGTERM')
  const [code] = await Promise.race([exited, sleep(5000).then(() => ['no exit within 5 s'])])
  assert.equal(code, 0, stderr)
})

test('a log whose reader stops reading (a pipe left full) does not keep the service from exiting on SIGTERM', async (t) => {
  const dir = tempDir(t)
  const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'store.db')}`, HOST: '127.0.0.1', LOG_FORMAT: 'json', LOG_REQUESTS: 'on', RATE_LIMIT_PER_MINUTE: '0' }
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  probe.close()
  // Its stdout is a pipe this test never reads.
  const child = spawn(process.execPath, [...CLI, 'serve'], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const exited = once(child, 'exit')
  let served = 0
  for (const deadline = Date.now() + 15_000; served < 1500 && Date.now() < deadline;) {
    const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined)
    if (response?.status === 200) served++
    else await sleep(50)
  }
  assert.equal(served, 1500, 'its log lines, some 300 KB, are more than the pipe holds')
  child.kill('SIGTERM')
  const [code] = await Promise.race([exited, sleep(6000).then(() => ['no exit within 6 s'])])
  assert.equal(code, 0)
})

test('a port in use (with workers too), or an address not of this machine, is one line naming the setting to change, and exit 2, before the API listens', async (t) => {
  const taken = createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.after(() => taken.close())
  const { port } = taken.address() as AddressInfo
  const env = { DATABASE_URL: `sqlite:${tempDir(t)}/petstore.db`, HOST: '127.0.0.1' }
  const api = await runCli(['serve'], { ...env, PORT: String(port) })
  assert.equal(api.code, 2)
  assert.match(api.stderr, new RegExp(`^petstore: Cannot listen: port ${port} on 127\\.0\\.0\\.1 is in use by another process; set PORT to a free port, or stop that process$`, 'm'))
  // Workers: one line, not one per worker (the first starts alone; the others once it listens).
  const workers = await runCli(['serve'], { ...env, PORT: String(port), WEB_CONCURRENCY: '3' })
  assert.equal(workers.code, 2, workers.stderr)
  assert.equal(workers.stderr.match(/is in use by another process/g)?.length, 1, workers.stderr)
  const metrics = await runCli(['serve'], { ...env, PORT: '0', METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1' })
  assert.equal(metrics.code, 2)
  assert.match(metrics.stderr, /set METRICS_PORT to a free port/)
  assert.doesNotMatch(metrics.stdout, /listening/i, 'the API never listened, to drop its first connections at once')
  // 192.0.2.1 is for documentation (RFC 5737): no machine has it.
  const elsewhere = await runCli(['serve'], { ...env, PORT: '0', METRICS_PORT: '0', METRICS_HOST: '192.0.2.1' })
  assert.equal(elsewhere.code, 2)
  assert.match(elsewhere.stderr, /^petstore: Cannot listen: 192\.0\.2\.1 is not an address of this machine; set METRICS_HOST to one, such as 127\.0\.0\.1 or 0\.0\.0\.0$/m)
  assert.doesNotMatch(elsewhere.stdout, /listening/i)
  // A link-local address without its zone: EINVAL, which exited 1 with Node's own message.
  const zoneless = await runCli(['serve'], { ...env, PORT: '0', HOST: 'fe80::1' })
  assert.equal(zoneless.code, 2, zoneless.stderr)
  assert.match(zoneless.stderr, /^petstore: Cannot listen: fe80::1 is not an address of this machine; set HOST to one/m)
})

test('a SQLite store that cannot be opened is one line naming its path, and exit 2 (a setting to change), from serve and the CLI alike', async (t) => {
  // Its path printed as the terminal should show it: an escape sequence in a file name is not run.
  const dir = tempDir(t)
  const notAStore = join(dir, 'notes\u001b[31m.db')
  writeFileSync(notAStore, 'notes, not a SQLite database\n'.repeat(100))
  for (const args of [['serve'], ['keys', 'list']]) {
    const result = await runCli(args, { DATABASE_URL: `sqlite:${notAStore}`, PORT: '0', HOST: '127.0.0.1' })
    assert.equal(result.code, 2, result.stderr)
    assert.equal(result.stderr, `petstore: Cannot open the SQLite store at ${join(dir, 'notes\\u001b[31m.db')}: file is not a database\n`, args.join(' '))
  }
})

test('a SQLite store whose folder is a file names that file, from serve and the CLI alike', async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'notes.txt')
  writeFileSync(file, 'notes\n')
  // mkdir says EEXIST for the file itself and ENOTDIR below it, naming neither as the cause.
  for (const path of [join(file, 'petstore.db'), join(file, 'deeper', 'petstore.db')]) {
    for (const args of [['serve'], ['keys', 'list']]) {
      const result = await runCli(args, { DATABASE_URL: `sqlite:${path}`, PORT: '0', HOST: '127.0.0.1' })
      assert.equal(result.code, 2, result.stderr)
      assert.equal(result.stderr, `petstore: Cannot open the SQLite store at ${path}: ${file} is a file, not a folder\n`, args.join(' '))
    }
  }
})

test('a SQLite store file, or its folder, that this process may not write is refused at start, naming it, from serve and the CLI alike: the service started, ready, and answered every write 503', async (t) => {
  const dir = tempDir(t)
  const path = join(dir, 'petstore.db')
  const databaseUrl = `sqlite:${path}`
  // Migrated, with a key: a start then writes nothing, which is how the file's being read-only went unseen.
  assert.equal((await runCli(['keys', 'create', '--name', 'owner'], { DATABASE_URL: databaseUrl })).code, 0)
  // Root writes any file, so as root the commands run as nobody.
  const asOther = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
  const uid = asOther.uid ?? process.getuid?.()
  const cases = [
    // A writable folder (SQLite makes its -wal and -shm there), a file only readable.
    { folderMode: 0o777, fileMode: 0o444, refusal: 'may not write to it (EACCES)' },
    // A writable file in a folder only readable: SQLite said "attempt to write a readonly database".
    { folderMode: 0o555, fileMode: 0o666, refusal: `may not write to its folder ${dir}, where SQLite makes the store's files (EACCES)` }
  ]
  defer(t, () => { chmodSync(dir, 0o755) }) // for its removal, before it
  for (const { folderMode, fileMode, refusal } of cases) {
    chmodSync(dir, folderMode)
    chmodSync(path, fileMode)
    for (const args of [['serve'], ['keys', 'list']]) {
      const child = spawn(process.execPath, [...CLI, ...args], { ...asOther, env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'] })
      // It started and served, before: killed past 10 s.
      const timer = setTimeout(() => { child.kill('SIGKILL') }, 10_000)
      let stderr = ''
      child.stderr.on('data', (chunk) => { stderr += chunk })
      const [code] = await once(child, 'exit')
      clearTimeout(timer)
      assert.equal(code, 2, stderr)
      assert.equal(stderr, `petstore: Cannot open the SQLite store at ${path}: this process (uid ${uid}) ${refusal}\n`, args.join(' '))
    }
  }
  // A link in a folder only readable, to a store in a writable one: SQLite writes beside the store.
  chmodSync(dir, 0o777)
  const links = tempDir(t)
  symlinkSync(path, join(links, 'petstore.db'))
  chmodSync(links, 0o555)
  defer(t, () => { chmodSync(links, 0o755) })
  const linked = spawnSync(process.execPath, [...CLI, 'keys', 'list'], { ...asOther, env: { ...process.env, DATABASE_URL: `sqlite:${join(links, 'petstore.db')}` }, encoding: 'utf8' })
  assert.equal(linked.status, 0, linked.stderr)
})

test('a PostgreSQL store that cannot be reached is one line saying so, and exit 1 (an outage), from serve and the CLI alike: the driver\'s alone (connect ECONNREFUSED 127.0.0.1:1) named neither', async () => {
  // Through TCP, and through a Unix socket, which a server stopped cleanly removes (ENOENT).
  const unreachable = [
    ['postgres://app:s3cret@127.0.0.1:1/pets', 'connect ECONNREFUSED 127.0.0.1:1'],
    ['postgres://app:s3cret@localhost/pets?host=/nonexistent', 'connect ENOENT /nonexistent/.s.PGSQL.5432']
  ]
  for (const [url, reason] of unreachable) {
    for (const args of [['serve'], ['keys', 'list']]) {
      const result = await runCli(args, { DATABASE_URL: url, PORT: '0', HOST: '127.0.0.1' })
      assert.equal(result.code, 1, result.stderr)
      assert.equal(result.stderr, `petstore: Cannot use the PostgreSQL store that DATABASE_URL names: ${reason}\n`, args.join(' '))
    }
  }
})

const postgresUrl = process.env.TEST_DATABASE_DIRECT_URL ?? process.env.TEST_DATABASE_URL
if (postgresUrl !== undefined) {
  test('a PostgreSQL server that refuses DATABASE_URL\'s role or database is one line in its words, and exit 2 (a setting to change), from serve and the CLI alike', async () => {
    const unknownRole = new URL(postgresUrl)
    unknownRole.username = 'no_such_role'
    const unknownDatabase = new URL(postgresUrl)
    unknownDatabase.pathname = '/no_such_database'
    // A server that asks for passwords refuses an unknown role as it does a wrong password.
    const refusals = [[unknownRole, /role "no_such_role" does not exist|password authentication failed for user "no_such_role"/], [unknownDatabase, /database "no_such_database" does not exist/]] as const
    for (const [url, refusal] of refusals) {
      for (const args of [['serve'], ['keys', 'list']]) {
        const result = await runCli(args, { DATABASE_URL: url.toString(), PORT: '0', HOST: '127.0.0.1' })
        assert.equal(result.code, 2, result.stderr)
        assert.match(result.stderr, new RegExp(`^petstore: Cannot use the PostgreSQL store that DATABASE_URL names: (${refusal.source})\n$`), args.join(' '))
      }
    }
  })
}

test('a SQLite store whose folder cannot be made is one line, at once: /proc, where mkdir -p spun forever', { timeout: 10_000 }, async () => {
  // Node's recursive mkdir retries for ever where the kernel answers ENOENT though the parent exists.
  const path = '/proc/petstore/petstore.db'
  const result = await runCli(['keys', 'list'], { DATABASE_URL: `sqlite:${path}` })
  assert.equal(result.code, 2, result.stderr)
  assert.match(result.stderr, /^petstore: Cannot open the SQLite store at \/proc\/petstore\/petstore\.db: ENOENT: no such file or directory, mkdir '\/proc\/petstore'\n$/)
})

test('a warning of Node or a library (pg on sslmode=require) is one log line of the service, not lines of its own on stderr; none under NODE_NO_WARNINGS=1', async () => {
  // Nothing listens on port 1: the store cannot be reached, after pg has warned of the URL as it read it.
  const env = { DATABASE_URL: 'postgres://petstore:secret@127.0.0.1:1/petstore?sslmode=require', PORT: '0', HOST: '127.0.0.1', LOG_FORMAT: 'json' }
  const silenced = await runCli(['serve'], { ...env, NODE_NO_WARNINGS: '1' })
  assert.equal(silenced.code, 1, silenced.stderr)
  assert.doesNotMatch(silenced.stdout + silenced.stderr, /warning|sslmode|SSL modes/i)
  const result = await runCli(['serve'], { ...env, NODE_NO_WARNINGS: undefined })
  assert.equal(result.code, 1, result.stderr)
  assert.doesNotMatch(result.stderr, /Warning|sslmode/, 'Node writes no warning of its own')
  const warnings = result.stdout.split('\n').filter((line) => line.includes('"warning"')).map((line) => JSON.parse(line) as { level: number, msg: string, warning: { name: string } })
  assert.equal(warnings.length, 1, result.stdout)
  assert.equal(warnings[0]!.level, 40)
  assert.equal(warnings[0]!.warning.name, 'Warning')
  assert.match(warnings[0]!.msg, /SSL modes 'prefer', 'require', and 'verify-ca'/)
  assert.doesNotMatch(result.stdout + result.stderr, /secret/)
  // The other commands say it on stderr as their other messages: petstore's prefix, not Node's (node:PID) and its hint.
  const listed = await runCli(['keys', 'list'], env)
  assert.equal(listed.code, 1, listed.stderr)
  assert.match(listed.stderr, /^petstore: warning: SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca'/m)
  assert.doesNotMatch(listed.stderr, /\(node:\d+\)|--trace-warnings|secret/)
})

test('the console: on a terminal, lines a person reads and one per request; elsewhere JSON, a line per request only with LOG_REQUESTS=on', async (t) => {
  const env = { DATABASE_URL: `sqlite:${tempDir(t)}/petstore.db` }
  // `script` runs the service on a pseudo-terminal, as a user's shell would.
  const command = [process.execPath, ...CLI, 'serve'].map((arg) => `'${arg}'`).join(' ')
  const terminal = await startServer(t, { ...env, TERM: 'xterm' }, ['script', '-qec', command, '/dev/null'])
  assert.equal((await fetch(`${terminal.url}/healthz`)).status, 200)
  await waitFor(() => /INFO.*: .*GET \/healthz 200 [\d.]+ ms/.test(terminal.output()), terminal.output)
  assert.doesNotMatch(terminal.output(), /"level":/)
  await terminal.stop()

  const quiet = await startServer(t, env)
  assert.equal((await fetch(`${quiet.url}/healthz`)).status, 200)
  assert.equal(await quiet.stop(), 0)
  assert.match(quiet.output(), /"msg":"shutting down"/)
  const { stdout: version } = await runCli(['--version'], {})
  assert.equal(JSON.parse(quiet.output().split('\n')[0]!).msg, `starting petstore ${version.trim()}`)
  assert.doesNotMatch(quiet.output(), /healthz/)
  assert.doesNotMatch(quiet.output(), /rate-limited/)

  // Limiting off is said at start, once.
  const lines = await startServer(t, { ...env, LOG_REQUESTS: 'on', RATE_LIMIT_PER_MINUTE: '0' })
  assert.equal((await fetch(`${lines.url}/healthz`)).status, 200)
  assert.equal(await lines.stop(), 0)
  const line = lines.output().split('\n').filter((text) => text.includes('"url"')).map((text) => JSON.parse(text))
  assert.equal(line.length, 1, lines.output())
  assert.deepEqual({ ...line[0], time: 0, pid: 0, hostname: '', reqId: '', ms: 0 }, { level: 30, time: 0, pid: 0, hostname: '', reqId: '', method: 'GET', url: '/healthz', statusCode: 200, ms: 0, msg: 'request completed' })
  assert.equal(typeof line[0].ms, 'number')
  assert.equal(lines.output().match(/"level":40,.*"msg":"RATE_LIMIT_PER_MINUTE is 0: no request is rate-limited, by key or by client address"/g)?.length, 1, lines.output())
})

test('API_KEY_DEFAULT_TTL gives the first key its lifetime, which every answer announces in its last 7 days', async (t) => {
  const env = { DATABASE_URL: `sqlite:${tempDir(t)}/petstore.db`, API_KEY_DEFAULT_TTL: '2d' }
  const server = await startServerOnTerminal(t, env)
  const [key] = printedKeys(server.output())
  const response = await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
  assert.equal(response.status, 200)
  const expiresIn = Date.parse(response.headers.get('api-key-expiration')!) - Date.now()
  assert.ok(expiresIn > 2 * 86_400_000 - 120_000 && expiresIn <= 2 * 86_400_000, `${expiresIn} ms`)
  const [first] = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as Array<{ createdAt: string, expiresAt: string }>
  assert.equal(Date.parse(first!.expiresAt) - Date.parse(first!.createdAt), 2 * 86_400_000, 'exactly 2 days from its creation')
  assert.match(server.output(), new RegExp(`^It expires at ${first!.expiresAt} \\(API_KEY_DEFAULT_TTL\\)\\.\\r$`, 'm'), 'the banner says when, as keys create does')
})

for (const store of TEST_STORES.filter((candidate) => candidate.name === 'postgres')) {
  test('a stop asked while the service starts (another migrator holding the lock) is acted on without taking the port; a second exits 1 at once', async (t) => {
    const databaseUrl = await store.databaseUrl(t)
    await runCli(['migrate'], { DATABASE_URL: databaseUrl })
    const holder = new pg.Client({ connectionString: databaseUrl })
    await holder.connect()
    defer(t, () => holder.end())
    const holdLock = async () => { await holder.query('begin; select pg_advisory_xact_lock(3853314791062309107)') } // the lock migration-lock.ts takes
    await holdLock()
    const held = await startProcess(t, { DATABASE_URL: databaseUrl, LOG_FORMAT: 'json' }, /"msg":"starting petstore/)
    await sleep(300)
    held.child.kill('SIGTERM')
    const heard = /"msg":"SIGTERM while starting: the service stops once its store is ready, without taking its port"/
    await waitFor(() => heard.test(held.output()), held.output) // said at once, the lock still held
    await holder.query('rollback')
    const [code] = await Promise.race([once(held.child, 'exit'), sleep(10_000).then(() => ['no exit within 10 s'])])
    assert.equal(code, 0, held.output())
    assert.match(held.output(), /"msg":"shutting down/)
    assert.doesNotMatch(held.output(), /Server listening/, 'the port is not taken once a stop was asked')

    await holdLock()
    const twice = await startProcess(t, { DATABASE_URL: databaseUrl, LOG_FORMAT: 'json' }, /"msg":"starting petstore/)
    await sleep(300)
    twice.child.kill('SIGTERM')
    await sleep(300)
    assert.equal(twice.child.exitCode, null, 'the first signal waits for the start')
    twice.child.kill('SIGINT')
    const [second] = await Promise.race([once(twice.child, 'exit'), sleep(3000).then(() => ['no exit within 3 s'])])
    assert.equal(second, 1, twice.output())
    assert.match(twice.output(), /"msg":"second SIGINT while starting: exiting at once"/)
    await holder.query('rollback')

    // With workers, the one the primary started listened, and only then was told to stop.
    await holdLock()
    const primary = await startProcess(t, { DATABASE_URL: databaseUrl, LOG_FORMAT: 'json', WEB_CONCURRENCY: '2' }, /"msg":"starting petstore/)
    primary.child.kill('SIGTERM')
    await waitFor(() => heard.test(primary.output()), primary.output)
    await holder.query('rollback')
    const [stopped] = await Promise.race([once(primary.child, 'exit'), sleep(10_000).then(() => ['no exit within 10 s'])])
    assert.equal(stopped, 0, primary.output())
    assert.doesNotMatch(primary.output(), /Server listening|starting workers/, 'no worker is started once a stop was asked')
  })

  test('a PostgreSQL database whose encoding cannot hold UTF-8 is refused, naming it, before anything is migrated, from serve and the CLI alike', async (t) => {
    const url = new URL(await store.databaseUrl(t))
    const admin = new pg.Client({ connectionString: url.toString() })
    await admin.connect()
    defer(t, () => admin.end())
    const name = `${url.pathname.slice(1)}_latin1`
    await admin.query(`create database ${name} encoding 'LATIN1' template template0 lc_collate 'C' lc_ctype 'C'`)
    defer(t, () => admin.query(`drop database if exists ${name} with (force)`))
    url.pathname = `/${name}`
    for (const args of [['serve'], ['keys', 'list']]) {
      const result = await runCli(args, { DATABASE_URL: url.toString(), PORT: '0', HOST: '127.0.0.1' })
      assert.equal(result.code, 2, result.stderr)
      assert.match(result.stderr, /^petstore: The PostgreSQL database is encoded in LATIN1, and the service stores text as UTF-8: /m)
    }
    const latin1 = new pg.Client({ connectionString: url.toString() })
    await latin1.connect()
    defer(t, () => latin1.end())
    assert.equal((await latin1.query("select count(*)::int as tables from information_schema.tables where table_schema = 'public'")).rows[0].tables, 0)
    // SQL_ASCII (initdb's under the C locale) keeps the bytes it is sent: served, as it always was.
    url.pathname = `/${name}_ascii`
    await admin.query(`create database ${name}_ascii encoding 'SQL_ASCII' template template0 lc_collate 'C' lc_ctype 'C'`)
    defer(t, () => admin.query(`drop database if exists ${name}_ascii with (force)`))
    const created = await runCli(['keys', 'create', '--name', 'Café'], { DATABASE_URL: url.toString() })
    assert.equal(created.code, 0, created.stderr)
    assert.match((await runCli(['keys', 'list'], { DATABASE_URL: url.toString() })).stdout, /Café/)
  })
}

if (process.env.TEST_REDIS_URL !== undefined) {
  test('a start that fails once the store is open (REDIS_URL names a database the Redis server lacks) closes the store: exit 2, and no folder of sqlite::memory: left behind', async (t) => {
    const temp = tempDir(t)
    const redis = new URL(process.env.TEST_REDIS_URL!)
    redis.pathname = '/999'
    const result = await runCli(['serve'], { DATABASE_URL: 'sqlite::memory:', REDIS_URL: redis.toString(), TMPDIR: temp, PORT: '0', HOST: '127.0.0.1' })
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, /REDIS_URL names database 999/)
    assert.deepEqual(readdirSync(temp).filter((name) => name.startsWith('petstore-memory-')), [])
  })
}

test('sqlite::memory: started where the output is not a terminal logs that no key can be made for it, not the advice of a command that refuses that store', async (t) => {
  const logged = await startServer(t, { DATABASE_URL: 'sqlite::memory:', LOG_FORMAT: 'json' })
  const hint = logged.output().split('\n').find((line) => line.includes('no API key'))
  assert.ok(hint, logged.output())
  assert.match(JSON.parse(hint).msg, /^this store has no API key, and none can be made for it: sqlite::memory: is this process's own.*run the service in a terminal/)
  assert.doesNotMatch(hint, /make one with/)
  assert.equal(await logged.stop('SIGTERM'), 0)
})
