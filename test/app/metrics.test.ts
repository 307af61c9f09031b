import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { ANSWER_MS, ClusterMetrics } from '../../src/metrics/cluster-metrics.js'
import { collectProcessMetrics, createMetrics, createMetricsServer } from '../../src/metrics/metrics.js'
import { SECURITY_HEADERS } from '../../src/plugins/security-headers.js'
import { QUEUE_DEPTH_WAIT_MS, WebhookMetrics } from '../../src/webhooks/webhook-metrics.js'
import { checkAnswers, closesWithin, connectRaw, createKey, createTestStore, defer, halfOpenAnswered, servedWithin, TEST_LIMITS, untilReceived, waitFor } from '../helper.js'
import { startServer } from '../process.js'

test('GET /metrics reports requests by route and status, and process metrics', async (t) => {
  const metrics = createMetrics()
  collectProcessMetrics(metrics)
  const { store, db, databaseUrl } = await createTestStore(t)
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store, metrics, limits: TEST_LIMITS })
  defer(t, () => app.close())
  checkAnswers(t, app)
  const headers = { authorization: `Bearer ${(await createKey(db)).key}` }
  await app.inject({ url: '/v1/pets', headers })
  await app.inject({ url: '/v1/pets', headers })
  await app.inject({ url: '/v1/pets/7', headers })
  await app.inject({ url: '/v1/pets' })
  await app.inject({ method: 'HEAD', url: '/v1/pets', headers })
  await app.inject({ url: '/nothing', headers })
  await app.inject({ method: 'DELETE', url: '/v1/pets', headers })
  // Refused by the router, before any route: a path that is not percent-encoded UTF-8, an id past its length.
  assert.equal((await app.inject({ url: '/v1/pets/%zz', headers })).statusCode, 400)
  assert.equal((await app.inject({ url: `/v1/pets/${'1'.repeat(9000)}`, headers })).statusCode, 414)

  const server = createMetricsServer(metrics.registry).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const response = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`)
  assert.equal(response.status, 200)
  assert.match(String(response.headers.get('content-type')), /^text\/plain/)
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(response.headers.get(name), value, 'as on every other answer')
  const text = await response.text()
  assert.match(text, /http_requests_total\{method="GET",route="\/v1\/pets",status="200"\} 2/)
  assert.match(text, /http_requests_total\{method="GET",route="\/v1\/pets\/:petId",status="404"\} 1/)
  assert.match(text, /http_requests_total\{method="GET",route="\/v1\/pets",status="401"\} 1/)
  assert.match(text, /http_requests_total\{method="HEAD",route="\/v1\/pets",status="200"\} 1/)
  // Answered by no route: counted once each, under "unmatched".
  assert.match(text, /http_requests_total\{method="GET",route="unmatched",status="404"\} 1/)
  assert.match(text, /http_requests_total\{method="DELETE",route="unmatched",status="405"\} 1/)
  assert.match(text, /http_requests_total\{method="GET",route="unmatched",status="400"\} 1/)
  assert.match(text, /http_requests_total\{method="GET",route="unmatched",status="414"\} 1/)
  // The buckets, not how long these two took: a loaded CI machine once took over 0.1 s for the first.
  assert.match(text, /http_request_duration_seconds_bucket\{le="0\.1",method="GET",route="\/v1\/pets",status="200"\} [012]\n/)
  assert.match(text, /http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/v1\/pets",status="200"\} 2\n/)
  assert.match(text, /http_request_duration_seconds_count\{method="GET",route="\/v1\/pets",status="200"\} 2\n/)
  assert.match(text, /process_cpu_user_seconds_total \d/)
  assert.match(text, /petstore_store_operation_duration_seconds_count\{operation="findPage",outcome="ok"\} 3/)
  assert.match(text, /petstore_store_operation_duration_seconds_count\{operation="findById",outcome="ok"\} 1/)
})

test('an event stream is counted once it ends, closed by its client or by the service', async (t) => {
  const metrics = createMetrics()
  const { store, db, databaseUrl } = await createTestStore(t)
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store, metrics, limits: TEST_LIMITS })
  defer(t, () => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/events/stream`
  const headers = { authorization: `Bearer ${(await createKey(db)).key}` }
  const streamCount = async () => Number(/http_requests_total\{method="GET",route="\/v1\/events\/stream",status="200"\} (\d+)/.exec(await metrics.registry.metrics())?.[1] ?? 0)

  const left = new AbortController()
  const leaving = await fetch(url, { headers, signal: left.signal })
  assert.equal(leaving.status, 200)
  const staying = await fetch(url, { headers })
  assert.equal(staying.status, 200)
  assert.equal(await streamCount(), 0, 'not while open')
  left.abort()
  let counted = 0
  for (let tries = 0; tries < 250 && counted === 0; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    counted = await streamCount()
  }
  assert.equal(counted, 1, 'the stream its client closed')
  await app.close()
  assert.equal(await streamCount(), 2, 'the stream the service ended counted')
  assert.match(await metrics.registry.metrics(), /http_request_duration_seconds_count\{method="GET",route="\/v1\/events\/stream",status="200"\} 2/)
})

test('answers the API gives before a request is read whole (malformed, headers too large, an unknown method, CONNECT, Expect) are counted by status', async (t) => {
  const metrics = createMetrics()
  const { store, databaseUrl } = await createTestStore(t)
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store, metrics, limits: TEST_LIMITS })
  defer(t, () => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  for (const raw of [
    'THIS IS NOT HTTP\r\n\r\n',
    `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    'FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
    'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n'
  ]) {
    const { socket, received } = connectRaw(port)
    socket.write(raw)
    await untilReceived(received, (text) => /^HTTP\/1\.1 \d{3} /.test(text))
    socket.destroy()
  }
  const text = await metrics.registry.metrics()
  for (const [status, count] of [['400', 2], ['417', 1], ['431', 1], ['501', 1]]) {
    assert.match(text, new RegExp(`http_unread_requests_total\\{status="${status}"\\} ${count}\n`), text)
  }
})

const NO_BODY = 'The metrics listener takes no body: send GET /metrics without Content-Length or Transfer-Encoding'

test('the metrics listener answers CONNECT, malformed HTTP, another HTTP version, no Host and a body with the Error body, as the API does', async (t) => {
  const server = createMetricsServer(createMetrics().registry).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const cases = [
    ['CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n', 'CONNECT is not served: this server is an API, not a proxy'],
    ['THIS IS NOT HTTP\r\n\r\n', 'The request is not valid HTTP: Invalid method encountered'],
    ['GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n', 'HTTP/2.0 is not served here: send HTTP/1.1'],
    ['GET /metrics HTTP/1.1\r\n\r\n', 'An HTTP/1.1 request must carry a Host header'],
    // Node takes an empty Transfer-Encoding for no body, and the body for a next request, which is not served.
    ['GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \r\nConnection: keep-alive\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n', NO_BODY],
    // A body is refused, not read: a client waiting for 100 Continue is not asked for it.
    ['POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello', NO_BODY],
    ['POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\nExpect: 100-continue\r\n\r\n', NO_BODY]
  ]
  for (const [raw, message] of cases) {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    socket.on('data', (chunk) => { received += chunk })
    socket.write(raw!)
    assert.ok(await closesWithin(socket, 5000), `the connection stayed open after ${raw!.split('\r\n')[0]}`)
    assert.match(received, /^HTTP\/1\.1 400 /, raw)
    assert.equal(received.split(/(?=HTTP\/1\.1 \d{3} )/).length, 1, received)
    assert.ok(received.endsWith(JSON.stringify({ code: 'bad_request', message, status: 400 })), received)
  }
})

test('the metrics listener holds a bounded number of connections, and closes one whose request head is slow', async (t) => {
  const server = createMetricsServer(createMetrics().registry, { maxConnections: 3, headersTimeoutMs: 200, requestTimeoutMs: 400, lingerMs: 200 }).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const held = Array.from({ length: 3 }, () => connectRaw(port))
  for (const { socket } of held) {
    socket.write('G') // a request begun, and never finished
    await once(socket, 'connect')
  }
  const extra = connectRaw(port)
  assert.ok(await closesWithin(extra.socket, 1000), 'a connection past the cap is closed at once')
  const closed = await Promise.all(held.map(async ({ socket }) => await closesWithin(socket, 1000)))
  assert.deepEqual(closed, [true, true, true], 'a slow request head is not waited for past its deadline')
  for (const { received } of held) assert.match(received(), /^HTTP\/1\.1 408 /)
  assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 200, 'served again once they are gone')
})

test('the metrics listener lets go of a connection it answered and closed, once a short wait for the client to close it too is over: 64 that never did kept scrapes out for good', async (t) => {
  const server = createMetricsServer(createMetrics().registry, { maxConnections: 3, headersTimeoutMs: 200, requestTimeoutMs: 400, lingerMs: 200 }).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const held = await Promise.all(Array.from({ length: 3 }, async () => await halfOpenAnswered(t, port, 'G')))
  for (const received of held) assert.match(received, /^HTTP\/1\.1 408 /)
  assert.ok(await servedWithin(async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).status === 200, 2000), 'a scrape is served again')
})

test('with workers, a scrape before any worker has answered one is a 503, not an empty 200, which Prometheus reads as a target up with no series', async (t) => {
  const cluster = new ClusterMetrics()
  const server = createMetricsServer({ metrics: async () => await cluster.metrics([]), contentType: cluster.contentType }).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)
  assert.equal(response.status, 503)
  assert.equal(response.headers.get('retry-after'), '1')
  assert.deepEqual(await response.json(), { code: 'service_unavailable', message: 'No worker has answered a scrape yet (starting, or frozen): nothing is known to show', status: 503 })
})

test('the metrics listener answers an Expect it cannot meet with a 417 in the Error shape, as the API does', async (t) => {
  const server = createMetricsServer(createMetrics().registry).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  // A list holding 100-continue asks for more than it: Node took it for it.
  for (const expect of ['200-ok', 'foo, 100-continue']) {
    const { socket, received } = connectRaw(port)
    socket.write(`GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: ${expect}\r\n\r\n`)
    assert.ok(await closesWithin(socket, 5000), 'the connection stayed open after the 417')
    assert.match(received(), /^HTTP\/1\.1 417 /)
    assert.match(received(), /\r\ncontent-type: application\/json; charset=utf-8\r\n/i)
    assert.ok(received().endsWith(JSON.stringify({ code: 'expectation_failed', message: `Expect: ${expect} cannot be met; only 100-continue can`, status: 417 })), received())
  }
})

test('the metrics listener answers HEAD /metrics as GET without the body, another method with a 405 naming GET and HEAD, and a body-less Expect: 100-continue', async (t) => {
  const server = createMetricsServer(createMetrics().registry).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`
  const head = await fetch(url, { method: 'HEAD' })
  assert.equal(head.status, 200)
  assert.match(String(head.headers.get('content-type')), /^text\/plain/)
  assert.equal(await head.text(), '')
  // The absolute form of the target, which a server must take (RFC 9112, section 3.2.2), and a query.
  for (const target of ['http://127.0.0.1/metrics', '/metrics?name=http_requests_total']) {
    const { socket, received } = connectRaw((server.address() as AddressInfo).port)
    socket.end(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
    await once(socket, 'close')
    assert.match(received(), /^HTTP\/1\.1 200 /, target)
  }
  const deleted = await fetch(url, { method: 'DELETE' })
  assert.equal(deleted.status, 405)
  assert.equal(deleted.headers.get('allow'), 'GET, HEAD')
  assert.deepEqual(await deleted.json(), { code: 'method_not_allowed', message: 'DELETE is not allowed here; use GET, HEAD', status: 405 })
  const { socket, received } = connectRaw((server.address() as AddressInfo).port)
  socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n')
  await untilReceived(received, (text) => /\r\n\r\n[^]*\r\n\r\n/.test(text))
  assert.match(received(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /)
  assert.doesNotMatch(received(), /connection: close/i)
  socket.destroy()

  // Behind an answer still to be written, a 417 comes in its turn.
  const { socket: behind, received: behindReceived } = connectRaw((server.address() as AddressInfo).port)
  behind.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n')
  assert.ok(await closesWithin(behind, 5000), 'the connection stayed open after the 417')
  assert.deepEqual(behindReceived().split(/(?=HTTP\/1\.1 \d{3} )/).map((answer) => answer.slice(0, 12)), ['HTTP/1.1 200', 'HTTP/1.1 417'])
})

test('without the process metrics (METRICS_PORT unset) answers and store calls are counted all the same', async (t) => {
  const metrics = createMetrics()
  const { store, db, databaseUrl } = await createTestStore(t)
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store, metrics, limits: TEST_LIMITS })
  defer(t, () => app.close())
  const headers = { authorization: `Bearer ${(await createKey(db)).key}` }
  assert.equal((await app.inject({ url: '/v1/pets', headers })).statusCode, 200)
  assert.equal((await app.inject({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId: 1 } })).statusCode, 201)

  const text = await metrics.registry.metrics()
  assert.match(text, /http_requests_total\{method="GET",route="\/v1\/pets",status="200"\} 1/)
  assert.match(text, /http_requests_total\{method="POST",route="\/v1\/pets",status="201"\} 1/)
  assert.match(text, /petstore_store_operation_duration_seconds_count\{operation="findPage",outcome="ok"\} 1/)
  assert.match(text, /petstore_store_operation_duration_seconds_count\{operation="create",outcome="ok"\} 1/)
  assert.doesNotMatch(text, /^process_|^nodejs_/m, 'process metrics are collected only where they are served')
})

test('what passes its retention and is deleted in the background is counted by kind: idempotency keys, events, webhook deliveries', async (t) => {
  const metrics = createMetrics()
  const { store, db, databaseUrl } = await createTestStore(t)
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store, metrics, limits: { ...TEST_LIMITS, expiredRowsDeletionMs: 20 } })
  defer(t, () => app.close())
  const headers = { authorization: `Bearer ${(await createKey(db)).key}` }
  for (const name of ['Rex', 'Tom']) {
    const created = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...headers, 'idempotency-key': name }, payload: { name, categoryId: 1 } })
    assert.equal(created.statusCode, 201)
  }
  const longAgo = new Date(Date.now() - 40 * 24 * 60 * 60 * 1000).toISOString() // past the 24 hours and EVENT_RETENTION_DAYS' 30 days
  await db.updateTable('idempotency_keys').set({ created_at: longAgo }).where('key', '=', 'Rex').execute()
  await db.updateTable('events').set({ occurred_at: longAgo }).execute()

  const kinds = ['idempotency_keys', 'events', 'webhook_deliveries']
  let counts: Array<string | undefined> = []
  for (let tries = 0; counts.join() !== '1,2,0' && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const text = await metrics.registry.metrics()
    counts = kinds.map((kind) => new RegExp(`petstore_expired_rows_deleted_total\\{kind="${kind}"\\} (\\d+)`).exec(text)?.[1])
  }
  assert.deepEqual(counts, ['1', '2', '0'])
  assert.deepEqual((await db.selectFrom('idempotency_keys').select('key').execute()).map(({ key }) => key), ['Tom'])
})

test('a store that cannot be read makes the webhook queue depth unknown (NaN), and the rest of the scrape is served', async () => {
  const metrics = createMetrics()
  let owed: () => Promise<number> = async () => 3
  new WebhookMetrics(metrics.registry, async () => await owed())
  const first = await metrics.registry.metrics()
  assert.match(first, /^petstore_webhook_queue_depth 3$/m)
  // Each outcome is there before any attempt, at 0.
  assert.match(first, /^petstore_webhook_deliveries_total\{outcome="delivered"\} 0$/m)
  assert.match(first, /^petstore_webhook_deliveries_total\{outcome="failed"\} 0$/m)
  owed = async () => { throw Object.assign(new Error('the store is down'), { code: 'ECONNREFUSED' }) }
  const text = await metrics.registry.metrics()
  assert.match(text, /^petstore_webhook_queue_depth nan$/mi) // prom-client writes Nan, which Prometheus reads as NaN
  assert.match(text, /^# TYPE petstore_webhook_deliveries_total counter$/m)
  assert.match(text, /^# TYPE http_requests_total counter$/m)
})

test('a store that does not answer (frozen) makes the webhook queue depth unknown within QUEUE_DEPTH_WAIT_MS, under the primary\'s wait for a worker\'s metrics (its counts went stale for the whole outage)', { timeout: 5000 }, async () => {
  const metrics = createMetrics()
  new WebhookMetrics(metrics.registry, () => new Promise(() => {}))
  const started = performance.now()
  assert.match(await metrics.registry.metrics(), /^petstore_webhook_queue_depth nan$/mi)
  const waitedMs = performance.now() - started
  assert.ok(waitedMs >= QUEUE_DEPTH_WAIT_MS - 1 && waitedMs < ANSWER_MS, `the scrape waited ${waitedMs} ms`)
})

test('metrics listen on 127.0.0.1 unless METRICS_HOST says otherwise, whatever HOST the API has', () => {
  assert.equal(loadConfig({ HOST: '0.0.0.0' }).METRICS_HOST, '127.0.0.1')
  assert.equal(loadConfig({ METRICS_HOST: '10.0.0.5' }).METRICS_HOST, '10.0.0.5')
})

test('petstore serve with METRICS_PORT serves /metrics on that port and METRICS_HOST, with store timings and process metrics', async (t) => {
  const { db, databaseUrl } = await createTestStore(t)
  const { key } = await createKey(db)
  const server = await startServer(t, { DATABASE_URL: databaseUrl, METRICS_PORT: '0', METRICS_HOST: '127.0.0.2' })
  const metricsAddress = /"address":\{"address":"127\.0\.0\.2","family":"IPv4","port":(\d+)\}/
  await waitFor(() => metricsAddress.test(server.output()), server.output)
  const address = metricsAddress.exec(server.output())!
  await fetch(`${server.url}/healthz`)
  const created = await fetch(`${server.url}/v1/pets`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}'
  })
  assert.equal(created.status, 201)
  const text = await (await fetch(`http://127.0.0.2:${address[1]}/metrics`)).text()
  assert.match(text, /petstore_store_operation_duration_seconds_count\{operation="create",outcome="ok"\} 1/)
  assert.match(text, /http_requests_total\{method="GET",route="\/healthz",status="200"\} 1/)
  assert.match(text, /^process_cpu_user_seconds_total \d/m, 'the process metrics, added where metrics are served')
  assert.equal(await server.stop(), 0)
})

test('the metrics listener takes one request at a time on a connection: one pipelined behind another is refused (400), closing the connection, so that a flood of them costs nothing', async (t) => {
  const server = createMetricsServer(createMetrics().registry).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const { socket, received } = connectRaw((server.address() as AddressInfo).port)
  socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(1000))
  assert.ok(await closesWithin(socket, 5000), 'the connection stayed open')
  const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
  assert.deepEqual(answers.map((answer) => answer.slice(0, 12)), ['HTTP/1.1 200', 'HTTP/1.1 400'])
  assert.ok(answers[1]!.endsWith(JSON.stringify({ code: 'bad_request', message: 'The metrics listener takes one request at a time on a connection: send the next once the answer before it has come', status: 400 })), answers[1])
})

test('scrapes that come while a collection is under way share the next one, begun once it ends: one collection at a time, none older than its scrape', async (t) => {
  let collections = 0
  let under = 0
  const slow = {
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
    metrics: async () => {
      assert.equal(under++, 0, 'one collection at a time')
      const number = ++collections
      await new Promise((resolve) => setTimeout(resolve, 300))
      under--
      return `collection ${number}\n`
    }
  }
  const server = createMetricsServer(slow).listen(0, '127.0.0.1')
  defer(t, () => server.close())
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`
  const first = fetch(url).then(async (response) => await response.text())
  while (collections === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  // These come during the first: they share the second, which counts what came before them.
  const during = await Promise.all(Array.from({ length: 9 }, async () => await (await fetch(url)).text()))
  assert.equal(await first, 'collection 1\n')
  assert.deepEqual(during, Array(9).fill('collection 2\n'))
  assert.equal(await (await fetch(url)).text(), 'collection 3\n', 'a later scrape collects again')
})
