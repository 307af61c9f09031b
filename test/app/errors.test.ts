import assert from 'node:assert/strict'
import { once } from 'node:events'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { test } from 'node:test'
import { EVENT_TYPES } from '../../src/events/event.schemas.js'
import { build, closesWithin, errorOf, exchange, forEachStore, openRawConnection, tempDir, untilReceived, type TestApp } from '../helper.js'
import { startServer } from '../process.js'

forEachStore((store) => {
  test('an unknown path is a 404 Error body, with or without a key', async (t) => {
    const testApp = await build(t, { store })
    for (const url of ['/nothing', '/v2/pets', '/v1/pets/1/toys', '/v1']) {
      const response = await testApp.app.inject({ url, headers: testApp.auth })
      assert.equal(response.statusCode, 404, url)
      assert.equal(errorOf(response).code, 'not_found')
    }
    assert.equal(errorOf(await testApp.app.inject({ url: '/nothing' })).status, 404)
  })

  test('a path with a trailing slash is a 404 that says so, before any validation of the path', async (t) => {
    const testApp = await build(t, { store })
    for (const url of ['/v1/pets/', '/v1/pets/?limit=5', '/v1/pets/1/', '/v1/openapi.json/', '/healthz/', '/readyz//']) {
      const response = await testApp.app.inject({ url, headers: testApp.auth })
      assert.equal(response.statusCode, 404, url)
      assert.equal(errorOf(response).message, 'No resource at this path: the service\'s paths take no trailing slash', url)
    }
    const created = await testApp.app.inject({ method: 'POST', url: '/v1/pets/', headers: testApp.auth, payload: { name: 'Rex', categoryId: 1 } })
    assert.equal(created.statusCode, 404)
    assert.equal(errorOf(await testApp.app.inject({ url: '/v1/nothing/', headers: testApp.auth })).message, 'No resource at this path')
  })

  test('a path of thousands of slashes is a 404 as cheap as any other: without a key, it held the event loop 0.1 to 0.3 s a request', async (t) => {
    const testApp = await build(t, { store })
    // Under the 16 KiB a request head may take. Trimming the slashes with /\/+$/ took time quadratic
    // in their run, a run that does not end the path most of all: 131 ms at 16,000 on a fast box.
    const paths = [`/x${'/'.repeat(16_300)}x`, `/x${'/'.repeat(16_300)}`, `/v1/pets${'/'.repeat(16_300)}x`, `/v1/pets${'/'.repeat(16_300)}`]
    // Three times over: some 2 s before, at least 0.6 s on a box three times faster; 10 to 50 ms since.
    const started = performance.now()
    for (const url of [...paths, ...paths, ...paths]) assert.equal((await testApp.app.inject({ url, headers: testApp.auth })).statusCode, 404)
    const ms = performance.now() - started
    assert.ok(ms < 500, `${ms} ms for ${3 * paths.length} requests`)
  })

  test('a path with a trailing slash carries none of the notices of the route that would take it: no operation is reached', async (t) => {
    const testApp = await build(t, { store })
    // getPet's (deprecated), the beta and the experimental collections', whose routes end in a parameter.
    for (const url of ['/v1/pets/', '/v1/categories/', '/v1/store/orders/', '/v1/webhooks/']) {
      for (const headers of [testApp.auth, {}]) {
        const response = await testApp.app.inject({ url, headers })
        assert.equal(response.statusCode, 'authorization' in headers ? 404 : 401, url)
        for (const name of ['deprecation', 'sunset', 'link', 'api-stability']) assert.equal(response.headers[name], undefined, `${url} ${name}`)
      }
    }
  })

  test('a query or path parameter at fault is named with its part of the request', async (t) => {
    const testApp = await build(t, { store })
    const cases = [
      ['/v1/pets?limit=0', 'Query parameter `limit` must be an integer from 1 to 100'],
      ['/v1/pets?status=lost', 'Query parameter `status` must be one of available, pending, sold'],
      ['/v1/pets?cursor=zzz', 'Query parameter `cursor` is malformed or was issued for another filter'],
      ['/v1/pets?status=available&status=sold', 'Query parameter `status` is given 2 times: give it once'],
      ['/v1/pets?limit=1&limit=2&limit=3', 'Query parameter `limit` is given 3 times: give it once'],
      // listEvents' `type` is one that takes a list.
      [`/v1/events?${[...EVENT_TYPES, EVENT_TYPES[0]].map((type) => `type=${type}`).join('&')}`, `Query parameter \`type\` must list at most ${EVENT_TYPES.length} items`],
      // Its values are each `type` to the client, which cannot send `type[1]`.
      ['/v1/events?type=pet.deleted', `Query parameter \`type\` must be one of ${EVENT_TYPES.join(', ')}`],
      ['/v1/events?type=pet.created&type=nope', `Query parameter \`type\` must be one of ${EVENT_TYPES.join(', ')}`],
      ['/v1/pets/abc', 'Path parameter `petId` must be an integer from 1 to 9223372036854775807']
    ]
    for (const [url, message] of cases) assert.equal(errorOf(await testApp.app.inject({ url: url!, headers: testApp.auth })).message, message, url)
  })

  test('a known path with another method is a 405 with Allow', async (t) => {
    const testApp = await build(t, { store })
    const cases = [['DELETE', '/v1/pets/1', 'GET, HEAD'], ['PUT', '/v1/pets', 'GET, HEAD, POST'], ['PATCH', '/v1/pets/7', 'GET, HEAD'], ['POST', '/healthz', 'GET, HEAD']] as const
    for (const [method, url, allow] of cases) {
      const response = await testApp.app.inject({ method, url, headers: testApp.auth })
      assert.equal(response.statusCode, 405, `${method} ${url}`)
      assert.equal(errorOf(response).code, 'method_not_allowed')
      assert.equal(response.headers.allow, allow)
    }
  })

  test('a 404 or 405 answers before the body is read: a body too large, of another charset or malformed does not answer first', async (t) => {
    const testApp = await build(t, { store })
    const bodies = [
      { 'content-type': 'application/json', payload: '{"name": ' },
      { 'content-type': 'application/json; charset=latin1', payload: '{}' },
      { 'content-type': 'application/json', payload: `{"name": "${'x'.repeat(20_000)}"}` }
    ]
    for (const { payload, ...headers } of bodies) {
      const notAllowed = await testApp.app.inject({ method: 'DELETE', url: '/v1/pets/1', headers: { ...testApp.auth, ...headers }, payload })
      assert.equal(notAllowed.statusCode, 405, headers['content-type'])
      assert.equal(notAllowed.headers.allow, 'GET, HEAD')
      const notFound = await testApp.app.inject({ method: 'POST', url: '/v1/toys', headers: { ...testApp.auth, ...headers }, payload })
      assert.equal(errorOf(notFound).code, 'not_found', headers['content-type'])
    }
  })

  test('a file the docs page does not have is a 404, not a 405 for the method its route allows, nor a 403 or 400 of the file server', async (t) => {
    const testApp = await build(t, { store })
    const urls = ['/docs/static/nope.js', '/docs/static/..%2f..%2fpackage.json', '/docs/static/../../package.json', '/docs/static/%2e%2e/%2e%2e/package.json',
      '/docs/static//evil.example/index.html', '/docs/static/%00', '/docs/static/.hidden']
    for (const url of urls) {
      for (const method of ['GET', 'HEAD'] as const) {
        const response = await testApp.app.inject({ method, url })
        assert.equal(response.statusCode, 404, `${method} ${url}`)
        if (method === 'GET') assert.deepEqual(errorOf(response), { code: 'not_found', message: 'No resource at this path', status: 404 }, url)
      }
    }
  })

  test('the docs page\'s files are sent whole, whatever Range or precondition asks (a 416 or 412 of the file server has no Error code), and do not offer ranges', async (t) => {
    const testApp = await build(t, { store })
    const url = '/docs/static/swagger-ui.css'
    const whole = await testApp.app.inject({ url })
    assert.equal(whole.statusCode, 200)
    assert.equal(whole.headers['accept-ranges'], undefined, 'Accept-Ranges: bytes offered what is never given')
    for (const headers of [{ range: 'bytes=99999999-' }, { range: 'bytes=0-9' }, { 'if-match': '"nope"' }, { 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' }]) {
      const response = await testApp.app.inject({ url, headers })
      assert.equal(response.statusCode, 200, JSON.stringify(headers))
      assert.equal(response.body, whole.body, JSON.stringify(headers))
    }
  })

  test('a malformed URL is a 400 Error body that does not repeat the URL, nor a key in it', async (t) => {
    const testApp = await build(t, { store })
    const key = testApp.auth.authorization.slice('Bearer '.length)
    const response = await testApp.app.inject({ url: `/v1/pets/%E0%A4%A?api_key=${key}`, headers: testApp.auth })
    assert.equal(response.statusCode, 400)
    assert.equal(errorOf(response).code, 'bad_request')
    assert.ok(!response.body.includes(key.slice(3)), 'the key sent in the URL came back in the error body')
    assert.match(errorOf(response).message, /percent-encoded/)
  })

  test('healthz answers 200 while the process runs; readyz 200 while the store answers, and 503 naming it when it does not', async (t) => {
    const testApp = await build(t, { store })
    for (const url of ['/healthz', '/readyz']) {
      const ok = await testApp.app.inject({ url })
      assert.equal(ok.statusCode, 200)
      assert.deepEqual(ok.json(), { status: 'ok' })
    }
    await testApp.store.close()
    const down = await testApp.app.inject({ url: '/readyz' })
    assert.equal(down.statusCode, 503)
    assert.equal(errorOf(down).code, 'service_unavailable')
    assert.match(errorOf(down).message, store.name === 'sqlite' ? /SQLite/ : /PostgreSQL/)
    assert.equal(down.headers['retry-after'], '1')
    assert.equal((await testApp.app.inject({ url: '/healthz' })).statusCode, 200, 'the process is alive: no restart for a store outage')
  })

  test('an unexpected failure is a 500 Error body without internals', async (t) => {
    const testApp = await build(t, { store })
    await testApp.db.schema.dropTable('orders').execute()
    await testApp.db.schema.dropTable('pets').execute()
    const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.equal(response.statusCode, 500)
    const error = errorOf(response)
    assert.equal(error.code, 'internal_error')
    assert.doesNotMatch(response.body, /pets|sqlite|stack|at /i)
  })
})

test('a client that closes its connection before its body is whole is no store outage: nothing logged as one', async (t) => {
  const testApp = await build(t)
  const failed = t.mock.method(testApp.app.outageLog, 'failed')
  const { socket } = await openRawConnection(testApp)
  const arrived = once(testApp.app.server, 'request') as Promise<[IncomingMessage]>
  socket.write(`POST /v1/pets HTTP/1.1\r\nhost: x\r\nauthorization: ${testApp.auth.authorization}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"name":`)
  const [request] = await arrived
  // Node's error for the cut body carries ECONNRESET, as a lost connection to PostgreSQL does.
  const bodyFailed = once(request, 'error') as Promise<[NodeJS.ErrnoException]>
  await new Promise((resolve) => setTimeout(resolve, 50)) // past the key's check, to the body
  socket.destroy()
  assert.equal((await bodyFailed)[0].code, 'ECONNRESET')
  await new Promise((resolve) => setTimeout(resolve, 100)) // the error handler's turn
  assert.equal(failed.mock.callCount(), 0)
})

test('a long path parameter is checked after the key, as any other: a 401 without one, a 400 naming it with one; past 8 KiB a 414 that does not echo it', async (t) => {
  const testApp = await build(t)
  const long = `/v1/pets/${'1'.repeat(101)}`
  assert.equal((await testApp.app.inject({ url: long })).statusCode, 401)
  const invalid = await testApp.app.inject({ url: long, headers: testApp.auth })
  assert.equal(invalid.statusCode, 400)
  assert.match(errorOf(invalid).message, /petId/)
  const tooLong = await testApp.app.inject({ url: `/v1/pets/${'1'.repeat(8193)}`, headers: testApp.auth })
  assert.equal(tooLong.statusCode, 414)
  assert.equal(errorOf(tooLong).code, 'uri_too_long')
  assert.equal(errorOf(tooLong).message, 'A path segment is longer than 8192 characters')
})

test('an Expect header other than 100-continue is a 417 Error body, which Node would send empty', async (t) => {
  const testApp = await build(t)
  await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = testApp.app.server.address() as AddressInfo
  // A list holding 100-continue, or 100-continue with a parameter, asks for more than it: Node took them for it.
  for (const [path, expect] of [['/v1/pets', 'foo'], ['/healthz', 'foo'], ['/v1/pets', 'foo, 100-continue'], ['/v1/pets', '100-continue;a=b'], ['/v1/pets', 'foo 100-continue']]) {
    // fetch refuses to send an Expect header.
    const outgoing = httpRequest({ port, host: '127.0.0.1', path, method: 'POST', headers: { ...testApp.auth, 'content-type': 'application/json', expect } })
    outgoing.end('{"name":"Rex","categoryId":1}')
    const [response] = await once(outgoing, 'response') as [IncomingMessage]
    let body = ''
    for await (const chunk of response) body += chunk
    assert.equal(response.statusCode, 417, `${path}, ${expect}`)
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8')
    assert.deepEqual(JSON.parse(body), { code: 'expectation_failed', message: `Expect: ${expect} cannot be met; only 100-continue can`, status: 417 })
  }
  assert.deepEqual((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json(), [], 'nothing created')
})

test('Expect: 100-continue is answered 100 Continue only when the body is to be read: a request refused before it gets its final answer alone, and the connection closes', async (t) => {
  const testApp = await build(t)
  const body = '{"name":"Rex","categoryId":1}'
  const head = (lines: string[]) => `POST ${lines[0]} HTTP/1.1\r\n${lines.slice(1).map((line) => `${line}\r\n`).join('')}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`
  const refused = [
    [head(['/v1/pets', 'Host: x']), 401],
    [head(['/v1/pets', `Authorization: ${testApp.auth.authorization}`]), 400],
    [head(['/v1/nothing', 'Host: x', `Authorization: ${testApp.auth.authorization}`]), 404]
  ] as const
  for (const [request, status] of refused) {
    const { socket, received } = await openRawConnection(testApp)
    socket.write(request)
    // The client waits for 100 Continue before its body: the final answer must come without it.
    assert.ok(await closesWithin(socket, 5000), `the connection stayed open after ${received()}`)
    assert.match(received(), new RegExp(`^HTTP/1\\.1 ${status} `), request)
    assert.doesNotMatch(received(), /100 Continue/, request)
  }
  const { socket, received } = await openRawConnection(testApp)
  socket.write(head(['/v1/pets', 'Host: x', `Authorization: ${testApp.auth.authorization}`]))
  await untilReceived(received, (text) => text.includes('\r\n\r\n'))
  assert.equal(received(), 'HTTP/1.1 100 Continue\r\n\r\n')
  socket.end(body)
  await once(socket, 'close')
  assert.match(received(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /)

  // Sent with its body behind a create, it is read once its turn comes, whole already: the connection is kept.
  const create = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  const pipelined = await openRawConnection(testApp)
  pipelined.socket.write(create + create.replace('\r\n\r\n', '\r\nExpect: 100-continue\r\n\r\n') + create)
  await untilReceived(pipelined.received, (text) => (text.match(/HTTP\/1\.1 201 /g) ?? []).length >= 3)
  assert.equal((pipelined.received().match(/HTTP\/1\.1 201 /g) ?? []).length, 3, pipelined.received())
  assert.doesNotMatch(pipelined.received(), /connection: close/i)
  pipelined.socket.destroy()
})

test('a name or header value quoted in an error message has its control characters as \\u escapes (a client that prints the message to a terminal does not run them), and is cut short', async (t) => {
  const testApp = await build(t)
  const query = await testApp.app.inject({ url: '/v1/pets?secret%00%1b%5B2J=1', headers: testApp.auth })
  assert.equal(errorOf(query).message, 'The query string has an unknown query parameter `secret\\u0000\\u001b[2J`')
  // A long name is cut, and says so, between characters: half of an emoji would be a lone surrogate.
  const long = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: 'Rex', categoryId: 1, [`${'A'.repeat(63)}😀 and more`]: 1 } })
  assert.equal(errorOf(long).message, `The body has an unknown field \`${'A'.repeat(63)}…\``)
  const body = '{"name":"Rex","categoryId":1}'
  const codings = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json', 'content-encoding': 'gzip\tx' }, payload: body })
  assert.equal(errorOf(codings).message, 'Content-Encoding gzip\\u0009x is not accepted; send the body as it is, without a content coding')
  const type = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'text/plain\t\u009b2J' }, payload: body })
  assert.match(errorOf(type).message, /^Content-Type text\/plain\\u0009\\u009b2J is not accepted; /)
  // A header of kilobytes is quoted cut short: a 415 has no need of it whole.
  const huge = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': `text/plain; x=${'y'.repeat(10_000)}` }, payload: body })
  assert.equal(huge.statusCode, 415)
  assert.match(errorOf(huge).message, /^Content-Type text\/plain; x=y{86}… is not accepted; /)
})

test('every operation refuses a query parameter it does not declare, as the lists do: a create sent as a "dry run" creates nothing', async (t) => {
  const testApp = await build(t)
  const create = await testApp.app.inject({ method: 'POST', url: '/v1/pets?dry_run=true', headers: testApp.auth, payload: { name: 'Rex', categoryId: 1 } })
  assert.equal(create.statusCode, 400, create.body)
  assert.deepEqual(errorOf(create), { code: 'validation_failed', message: 'The query string has an unknown query parameter `dry_run`', status: 400 })
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json().length, 0, 'nothing was created')
  const created = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: 'Rex', categoryId: 1 } })
  for (const url of [`/v1/pets/${created.json().id}?expand=owner`, '/v1/categories/1?x=']) {
    const read = await testApp.app.inject({ url, headers: testApp.auth })
    assert.equal(read.statusCode, 400, url)
    assert.match(errorOf(read).message, /^The query string has an unknown query parameter `(expand|x)`$/)
  }
  // Outside the API, a query changes nothing: a cache-busting one on the health check is answered.
  assert.equal((await testApp.app.inject({ url: '/healthz?t=1' })).statusCode, 200)
})

test('CONNECT, which asks a proxy for a tunnel, is a 400 Error body, where Node would close the connection without a word', async (t) => {
  const testApp = await build(t)
  for (const target of ['127.0.0.1:443', '/v1/pets']) {
    const { socket, received } = await openRawConnection(testApp)
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: 127.0.0.1:443\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`)
    await once(socket, 'close')
    const [head, body] = received().split('\r\n\r\n')
    assert.match(head!, /^HTTP\/1\.1 400 /, target)
    assert.match(head!, /\r\nconnection: close(\r\n|$)/i)
    assert.deepEqual(JSON.parse(body!), { code: 'bad_request', message: 'CONNECT is not served: this server is an API, not a proxy', status: 400 })
  }
})

test('a CONNECT whose client resets the connection before its answer is written costs nothing but that connection', async (t) => {
  const testApp = await build(t)
  const errors: unknown[] = []
  const onError = (error: unknown) => { errors.push(error) }
  process.on('uncaughtException', onError)
  t.after(() => { process.off('uncaughtException', onError) })
  for (let i = 0; i < 3; i++) {
    const { socket } = await openRawConnection(testApp)
    socket.write('CONNECT a:1 HTTP/1.1\r\nHost: a\r\n\r\n', () => { socket.resetAndDestroy() })
    await once(socket, 'close')
  }
  await new Promise((resolve) => setTimeout(resolve, 100))
  // Node hands a CONNECT's socket over without its error listener: the reset was an uncaught error.
  assert.deepEqual(errors, [])
  const { socket, received } = await openRawConnection(testApp)
  socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
  await once(socket, 'close')
  assert.match(received(), /^HTTP\/1\.1 200 /)
})

test('a method the server does not know is a 501 Error body (RFC 9110, section 9.1), after the answer of a request before it; bytes that are no request line stay a 400', async (t) => {
  const testApp = await build(t)
  const notImplemented = { code: 'not_implemented', message: 'The method is not one this server implements (methods are case-sensitive: GET, not get)', status: 501 }
  const notHttp = { code: 'bad_request', message: 'The request is not valid HTTP: Invalid method encountered', status: 400 }
  const cases = [
    ['FOO /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', notImplemented],
    // Methods are case-sensitive: `get` is no GET.
    [`get /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`, notImplemented],
    ['PROPFIX /healthz HTTP/1.0\r\n\r\n', notImplemented],
    ['THIS IS NOT HTTP\r\n\r\n', notHttp],
    // A TLS handshake sent to the plain HTTP port.
    ['\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', notHttp]
  ] as const
  for (const [raw, expected] of cases) {
    const [answer] = await answersUntilClosed(testApp, Buffer.from(raw, 'latin1'))
    const [head, body] = answer!.split('\r\n\r\n')
    assert.match(head!, new RegExp(`^HTTP/1\\.1 ${expected.status} `), raw)
    assert.deepEqual(JSON.parse(body!), expected)
  }
  const answers = await answersUntilClosed(testApp, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nFOO /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  assert.equal(answers.length, 2, answers.join(''))
  assert.match(answers[0]!, /^HTTP\/1\.1 200 /)
  assert.ok(answers[1]!.startsWith('HTTP/1.1 501 ') && answers[1]!.endsWith(JSON.stringify(notImplemented)), answers[1])
  // Declared on every operation, as the other answers given before a request is read whole, with this body as its example.
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json', headers: testApp.auth })).json()
  for (const [path, item] of Object.entries<Record<string, { responses: Record<string, { $ref?: string }> }>>(doc.paths)) {
    for (const [method, { responses }] of Object.entries(item)) {
      const declared = responses['501']?.$ref === undefined ? responses['501'] : doc.components.responses[responses['501'].$ref.split('/').at(-1)!]
      assert.ok(declared !== undefined, `${method} ${path} declares no 501`)
      // A HEAD's answers have no body.
      if (method !== 'head') assert.deepEqual(declared.content['application/json'].example, notImplemented, `${method} ${path}`)
    }
  }
})

test('an HTTP/1.1 request without a Host header is a 400 Error body, which Node would send empty', async (t) => {
  const testApp = await build(t)
  for (const path of ['/v1/pets', '/healthz']) {
    const reply = await exchange(testApp, `GET ${path} HTTP/1.1\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`)
    const [head, body] = reply.split('\r\n\r\n')
    assert.match(head!, /^HTTP\/1\.1 400 /, path)
    assert.match(head!, /content-type: application\/json; charset=utf-8/i)
    assert.deepEqual(JSON.parse(body!), { code: 'bad_request', message: 'An HTTP/1.1 request must carry a Host header', status: 400 })
  }
  // HTTP/1.0 has no such rule.
  const reply = await exchange(testApp, `GET /v1/pets HTTP/1.0\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`)
  assert.match(reply, /^HTTP\/1\.1 200 /)
})

test('a request target in absolute form whose host or port is not valid is a 400 that says so, not one about the path', async (t) => {
  const testApp = await build(t)
  for (const target of ['http://api.example.com:65536/healthz', 'http://[::1/healthz']) {
    const reply = await exchange(testApp, `GET ${target} HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n`)
    assert.match(reply, /^HTTP\/1\.1 400 /, target)
    assert.ok(reply.endsWith(JSON.stringify({ code: 'bad_request', message: 'The request target is an absolute URL whose host or port is not valid: send the path alone, with the host in Host', status: 400 })), reply)
  }
  // One that is valid is served, and a path not percent-encoded is still named so.
  assert.match(await exchange(testApp, 'GET http://api.example.com/healthz HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 200 /)
  assert.match(await exchange(testApp, 'GET /v1/pets/%ZZ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'), /"message":"The path is not valid percent-encoded UTF-8"/)
})

test('a request line of another HTTP version than 1.0 and 1.1 is a 400: Node served HTTP/2.0 as if it were 1.1', async (t) => {
  const testApp = await build(t)
  const reply = await exchange(testApp, 'GET /healthz HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n')
  assert.match(reply, /^HTTP\/1\.1 400 [^]*\{"code":"bad_request","message":"HTTP\/2\.0 is not served here: send HTTP\/1\.1","status":400\}$/)
})

test('a HEAD request refused before it is read (a head over 16 KiB, malformed bytes) gets its answer without a body, which Node\'s client took for a parse error', async (t) => {
  const testApp = await build(t)
  const long = `/v1/pets?${'x'.repeat(17_000)}`
  for (const [request, status] of [[`HEAD ${long} HTTP/1.1\r\nHost: a\r\n\r\n`, 431], ['HEAD /v1/pets HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 400]] as const) {
    const reply = await exchange(testApp, request)
    assert.match(reply, new RegExp(`^HTTP/1\\.1 ${status} [^]*\r\nContent-Length: \\d+\r\nConnection: close\r\n\r\n$`), JSON.stringify(reply))
    // Another method's answer keeps its body.
    assert.match(await exchange(testApp, request.replace('HEAD', 'GET')), new RegExp(`"status":${status}\\}$`))
  }
  const { port } = testApp.app.server.address() as AddressInfo
  const answer = await new Promise<IncomingMessage>((resolve, reject) => { httpRequest({ port, host: '127.0.0.1', method: 'HEAD', path: long }, resolve).on('error', reject).end() })
  assert.equal(answer.statusCode, 431)
})

test('a request target holding a `#` is a 400 saying so (RFC 9112, section 3.2): it was read as the start of a query', async (t) => {
  const testApp = await build(t)
  for (const target of ['/v1/pets#x', '/v1/pets/1#frag', '/v1/pets?limit=1#x', '/nothing#x', '/healthz#']) {
    const reply = await exchange(testApp, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`)
    const [head, body] = reply.split('\r\n\r\n')
    assert.match(head!, /^HTTP\/1\.1 400 /, target)
    assert.deepEqual(JSON.parse(body!), {
      code: 'bad_request',
      message: 'The request target holds a `#`: a URL\'s fragment is not sent to the server, and a `#` in a value is sent as %23',
      status: 400
    }, target)
  }
  const encoded = await testApp.app.inject({ url: '/v1/pets?cursor=%23', headers: testApp.auth })
  assert.match(errorOf(encoded).message, /cursor/)
})

test('a head that leaves the body\'s length unknown (Transfer-Encoding on HTTP/1.0, or empty) is a 400 that closes the connection, and no request sent after it on the connection is served (RFC 9112, sections 6.1, 6.3 and 9.6)', async (t) => {
  const testApp = await build(t)
  const body = '{"name":"Rex","categoryId":1}'
  const head = (line: string, transferEncoding: string) => `${line}\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nConnection: keep-alive\r\n` +
    `Content-Type: application/json\r\n${transferEncoding}\r\n`
  // Node takes an empty Transfer-Encoding for no body, and what follows for a next request: a request
  // smuggled past a proxy in front that reads the same bytes as this one's body.
  const smuggled = `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}`
  const empty = 'The Transfer-Encoding header is empty; send the body chunked or with a Content-Length'
  const cases = [
    // Node reads an HTTP/1.0 body as chunked, where an HTTP/1.0 proxy in front may not.
    [head('POST /v1/pets HTTP/1.0', 'Transfer-Encoding: chunked\r\n') + `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n${smuggled}`, 'An HTTP/1.0 request cannot carry Transfer-Encoding; send the body with a Content-Length'],
    [head('POST /v1/pets HTTP/1.1', 'Transfer-Encoding: \r\n') + smuggled, empty],
    [head('GET /v1/pets HTTP/1.1', 'Transfer-Encoding: \r\n') + smuggled, empty],
    // Node joins the lines into one value, `, `: a list of no coding, empty all the same.
    [head('GET /v1/pets HTTP/1.1', 'Transfer-Encoding:\r\ntransfer-encoding:\t\r\n') + smuggled, empty]
  ] as const
  for (const [raw, message] of cases) {
    const answers = await answersUntilClosed(testApp, raw)
    assert.equal(answers.length, 1, answers.join(''))
    const [answerHead, answer] = answers[0]!.split('\r\n\r\n')
    assert.match(answerHead!, /^HTTP\/1\.1 400 /, answer)
    assert.deepEqual(JSON.parse(answer!), { code: 'bad_request', message, status: 400 })
  }
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json().length, 0, 'nothing was created')
})

test('a request sent before malformed bytes, or before any bytes after its Connection: close, keeps its answer: a create is not told 400 once committed', async (t) => {
  const testApp = await build(t)
  const create = (connection: string) => `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\n` +
    `Connection: ${connection}\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n{"name":"Rex","categoryId":1}`
  const cases = [
    // The client asked to close: what follows is no request to serve (RFC 9112, section 9.6), nor to answer.
    [create('close') + 'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', []],
    [create('keep-alive') + 'THIS IS NOT HTTP\r\n\r\n', ['Invalid method encountered']]
  ] as const
  for (const [raw, malformed] of cases) {
    const { socket, received } = await openRawConnection(testApp)
    socket.write(raw)
    assert.ok(await closesWithin(socket, 5000), 'the connection stayed open')
    const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
    assert.equal(answers.length, 1 + malformed.length, received())
    assert.match(answers[0]!, /^HTTP\/1\.1 201 /, answers[0])
    malformed.forEach((found, i) => {
      assert.match(answers[i + 1]!, /^HTTP\/1\.1 400 /)
      assert.ok(answers[i + 1]!.endsWith(JSON.stringify({ code: 'bad_request', message: `The request is not valid HTTP: ${found}`, status: 400 })), answers[i + 1])
    })
  }
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json().length, 2, 'one pet a create')
})

test('a request answered before its body is read has a short body of known length read and dropped, and its connection kept: a proxy still sending the body gets the answer', async (t) => {
  const testApp = await build(t)
  const body = '{"name":"Rex","categoryId":1}'
  const create = `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}`
  // The body is written after the answer has come, as a proxy in front (nginx) goes on sending it.
  const withBody = (line: string, authorization: string, length = 2): [string, string] => [`${line}\r\nHost: 127.0.0.1\r\n${authorization}Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`, `{${' '.repeat(length - 2)}}`]
  const key = `Authorization: ${testApp.auth.authorization}\r\n`
  const cases = [
    [withBody('POST /v1/nothing HTTP/1.1', key), 404],
    [withBody('PUT /v1/pets HTTP/1.1', key), 405],
    [withBody('POST /v1/pets HTTP/1.1', ''), 401],
    // Past the 16 KiB limit, within the 1 MiB read after the answer.
    [withBody('POST /v1/pets HTTP/1.1', key, 200_000), 413]
  ] as const
  for (const [[head, rest], status] of cases) {
    const { socket, received } = await openRawConnection(testApp)
    const reset = new Promise((resolve) => socket.once('error', resolve))
    socket.write(head)
    await untilReceived(received, (text) => /^HTTP\/1\.1 \d{3} [^]*\r\n\r\n[^]*\}$/.test(text))
    socket.write(rest + create)
    await untilReceived(received, (text) => text.includes('HTTP/1.1 201 '))
    const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
    assert.deepEqual(answers.map((answer) => answer.slice(0, 12)), [`HTTP/1.1 ${status}`, 'HTTP/1.1 201'], received())
    assert.match(answers[0]!, /\r\nconnection: keep-alive\r\nkeep-alive: timeout=72\r\n/i)
    assert.equal(await Promise.race([reset, new Promise((resolve) => setTimeout(resolve, 50, 'no reset'))]), 'no reset')
    socket.destroy()
  }
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json().length, cases.length, 'one pet for each create after a refusal')
})

test('after a body dropped whole, bytes that are no request, in the same read, are answered 400 after the requests pipelined before them (they were dropped with the connection, unanswered)', async (t) => {
  const testApp = await build(t)
  const key = `Authorization: ${testApp.auth.authorization}\r\n`
  for (const [refused, status] of [[`POST /v1/pets HTTP/1.1\r\nHost: x\r\n${key}Content-Type: text/plain\r\nContent-Length: 1\r\n\r\n{`, 415], ['POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', 401]] as const) {
    const answers = (await exchange(testApp, `${refused}GET /v1/pets/1 HTTP/1.1\r\nHost: x\r\n${key}\r\nGARBAGE\r\n\r\n`)).match(/HTTP\/1\.1 \d{3}/g)
    assert.deepEqual(answers, [`HTTP/1.1 ${status}`, 'HTTP/1.1 404', 'HTTP/1.1 400'])
  }
})

test('a body dropped after its answer that never comes whole closes the connection at the request timeout, with no second answer; a client that asked to close has it closed', async (t) => {
  const testApp = await build(t, { limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 } })
  for (const status of [401, 413]) {
    const { socket, received } = await openRawConnection(testApp)
    const authorization = status === 401 ? '' : `Authorization: ${testApp.auth.authorization}\r\n`
    socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\nContent-Length: 20000\r\n\r\n{`)
    assert.ok(await closesWithin(socket, 3000), 'the connection stayed open')
    assert.deepEqual(received().match(/HTTP\/1\.1 \d{3}/g), [`HTTP/1.1 ${status}`], received())
  }
  const closing = await answersUntilClosed(testApp, 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')
  assert.equal(closing.length, 1)
  assert.match(closing[0]!, /^HTTP\/1\.1 401 [^]*\r\nconnection: close\r\n/i)
})

test('a request answered before its body is read has its connection closed when the body is long, of unknown length or the head was refused (400), and no request pipelined after it is served', async (t) => {
  const testApp = await build(t)
  const body = '{"name":"Rex","categoryId":1}'
  const create = `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}`
  const withBody = (line: string, authorization: string, framing = 'Content-Length: 2\r\n\r\n{}') => `${line}\r\nHost: 127.0.0.1\r\n${authorization}Content-Type: application/json\r\n${framing}`
  const key = `Authorization: ${testApp.auth.authorization}\r\n`
  const cases = [
    [withBody('POST /v1/pets HTTP/1.1', '', `Content-Length: ${1024 * 1024 + 1}\r\n\r\n{}`), 401],
    // A GET's body has no meaning: it is not read (see the next tests).
    [withBody('GET /v1/nothing HTTP/1.1', key), 404],
    [withBody('POST /v1/nothing HTTP/1.1', key, 'Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'), 404],
    // Refused for its head, before anything else looks at it.
    [withBody('POST /v1/pets HTTP/1.1', key).replace('Host: 127.0.0.1\r\n', ''), 400],
    [withBody('POST /v1/pets HTTP/1.1', `${key}Host: 127.0.0.1\r\n`), 400]
  ] as const
  for (const [first, status] of cases) {
    const { socket, received } = await openRawConnection(testApp)
    socket.write(first + create)
    assert.ok(await closesWithin(socket, 5000), `the connection stayed open after ${first.split('\r\n')[0]}`)
    const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
    assert.equal(answers.length, 1, received())
    assert.match(answers[0]!, new RegExp(`^HTTP/1\\.1 ${status} `), answers[0])
  }
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json().length, 0, 'nothing was created')
})

test('a request with an Expect header and no body keeps its connection, and a create pipelined after it is answered; after a 417 the connection closes and nothing pipelined after it is served', async (t) => {
  const testApp = await build(t)
  const body = '{"name":"Rex","categoryId":1}'
  const create = `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}`
  const list = (expect: string) => `GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nExpect: ${expect}\r\n\r\n`

  // Content-Length: 0 announces no body either.
  for (const first of [list('100-continue'), list('100-continue').replace('\r\n\r\n', '\r\nContent-Length: 0\r\n\r\n')]) {
    const kept = await openRawConnection(testApp)
    kept.socket.write(first + create)
    await untilReceived(kept.received, (text) => /HTTP\/1\.1 201 /.test(text))
    const finals = kept.received().split(/(?=HTTP\/1\.1 [2-5]\d\d )/).slice(1)
    assert.deepEqual(finals.map((answer) => answer.slice(0, 12)), ['HTTP/1.1 200', 'HTTP/1.1 201'], kept.received())
    assert.doesNotMatch(finals[0]!, /connection: close/i)
    kept.socket.destroy()
  }

  const refused = await openRawConnection(testApp)
  refused.socket.write(list('foo') + create)
  assert.ok(await closesWithin(refused.socket, 5000), 'the connection stayed open after the 417')
  const answers = refused.received().split(/(?=HTTP\/1\.1 \d{3} )/)
  assert.equal(answers.length, 1, refused.received())
  assert.match(answers[0]!, /^HTTP\/1\.1 417 /)
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json().length, 2, 'the create after the 417 was served')

  // Behind an answer still to be written, the 417 comes in its turn (its response has no socket yet).
  const behind = await openRawConnection(testApp)
  behind.socket.write('GET /nothing HTTP/1.1\r\nHost: x\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n')
  assert.ok(await closesWithin(behind.socket, 5000), 'the connection stayed open after the 417')
  assert.deepEqual(behind.received().split(/(?=HTTP\/1\.1 \d{3} )/).map((answer) => answer.slice(0, 12)), ['HTTP/1.1 404', 'HTTP/1.1 417'])
})

test('a create pipelined before CONNECT keeps its answer: the CONNECT is refused after it', async (t) => {
  const testApp = await build(t)
  const body = '{"name":"Rex","categoryId":1}'
  const { socket, received } = await openRawConnection(testApp)
  socket.write(`POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n`)
  assert.ok(await closesWithin(socket, 5000), 'the connection stayed open')
  const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
  assert.equal(answers.length, 2, received())
  assert.match(answers[0]!, /^HTTP\/1\.1 201 /)
  assert.ok(answers[1]!.endsWith('"message":"CONNECT is not served: this server is an API, not a proxy","status":400}'), answers[1])
})

test('a GET or HEAD request with a body is answered without reading it, and its connection closes: no body past the limit is read, nothing after it is served, and no 408 follows the answer', async (t) => {
  const testApp = await build(t, { limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 } })
  const [pet] = await Promise.all([testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: 'Rex', categoryId: 1 } })])
  const petPath = new URL(pet!.headers.location as string, 'http://x').pathname
  const auth = `Authorization: ${testApp.auth.authorization}\r\n`
  const cases = [
    // Over the 16 KiB a body may have, then a request pipelined behind it.
    [`GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 20000\r\n\r\n${'x'.repeat(20000)}GET ${petPath} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 200],
    ['HEAD /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n', 200]
  ] as const
  for (const [raw, status] of cases) {
    const answers = await answersUntilClosed(testApp, raw)
    assert.equal(answers.length, 1, answers.join(''))
    assert.match(answers[0]!, new RegExp(`^HTTP/1\\.1 ${status} `), raw.split('\r\n')[0])
    assert.match(answers[0]!, /\r\nconnection: close\r\n/i)
  }
  // A body that never ends: one answer, then the connection closes, where a 408 followed the 200 at the request timeout.
  const { socket, received } = await openRawConnection(testApp)
  socket.write(`GET ${petPath} HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 1000000000000\r\n\r\n`)
  const trickle = setInterval(() => socket.write('x'.repeat(100)), 100)
  try {
    assert.ok(await closesWithin(socket, 3000), 'the connection stayed open')
  } finally {
    clearInterval(trickle)
  }
  assert.deepEqual(received().match(/HTTP\/1\.1 \d{3}/g), ['HTTP/1.1 200'], received())
  // Fastify reads the body of a DELETE: one of no type is refused (with a JSON one, the limits hold), and the body dropped.
  const refused = await openRawConnection(testApp)
  refused.socket.write(`DELETE /v1/webhooks/1 HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 3\r\n\r\nabcGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`)
  await untilReceived(refused.received, (text) => text.includes('HTTP/1.1 200 '))
  assert.deepEqual(refused.received().match(/HTTP\/1\.1 \d{3}/g), ['HTTP/1.1 415', 'HTTP/1.1 200'], refused.received())
  refused.socket.destroy()
  // Without a body, or with an empty one, the connection stays.
  const kept = await openRawConnection(testApp)
  kept.socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 0\r\n\r\nGET /v1/pets HTTP/1.1\r\nHost: x\r\n${auth}\r\n`)
  await untilReceived(kept.received, (text) => (text.match(/HTTP\/1\.1 200 /g) ?? []).length === 2)
  assert.doesNotMatch(kept.received(), /connection: close/i)
  kept.socket.destroy()
})

test('a body whose chunks are malformed is a 400 at once, and one that trickles past the request timeout a 408: the answer of its own request is not waited for', async (t) => {
  const testApp = await build(t, { limits: { headersTimeoutMs: 200, requestTimeoutMs: 400 } })
  const head = `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\n`
  const malformed = await openRawConnection(testApp)
  malformed.socket.write(`${head}Transfer-Encoding: chunked\r\n\r\nzz\r\n`)
  assert.ok(await closesWithin(malformed.socket, 2000), 'no answer to a malformed chunk')
  assert.match(malformed.received(), /^HTTP\/1\.1 400 [^]*"message":"The request is not valid HTTP: Invalid character in chunk size"/)
  const trickled = await openRawConnection(testApp)
  trickled.socket.write(`${head}Content-Length: 100\r\n\r\n{`)
  const trickle = setInterval(() => trickled.socket.write(' '), 100)
  try {
    assert.ok(await closesWithin(trickled.socket, 3000), 'no answer to a body past the request timeout')
  } finally {
    clearInterval(trickle)
  }
  assert.match(trickled.received(), /^HTTP\/1\.1 408 /)
})

test('a body in a transfer coding other than chunked is a 400 naming it, not read as JSON', async (t) => {
  const testApp = await build(t)
  const json = Buffer.from('{"name":"Rex","categoryId":1}')
  for (const [codings, body] of [['gzip, chunked', gzipSync(json)], ['chunked', json]] as const) {
    const { socket, received } = await openRawConnection(testApp)
    socket.write(`POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\n` +
      `Content-Type: application/json\r\nTransfer-Encoding: ${codings}\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n`)
    socket.end(Buffer.concat([body, Buffer.from('\r\n0\r\n\r\n')]))
    await once(socket, 'close')
    const [head, answer] = received().split('\r\n\r\n')
    if (codings === 'chunked') {
      assert.match(head!, /^HTTP\/1\.1 201 /, answer)
      continue
    }
    assert.match(head!, /^HTTP\/1\.1 400 /, answer)
    assert.deepEqual(JSON.parse(answer!), { code: 'bad_request', message: 'Transfer-Encoding gzip, chunked is not accepted; send the body chunked or with a Content-Length, in no other transfer coding', status: 400 })
  }
})

test('a body in a transfer coding other than chunked is a 400 whatever its Content-Type, and the request gets no other answer', async (t) => {
  const testApp = await build(t)
  // Node's parser refuses a coding after chunked as it reads the head, but a body in no chunked coding
  // (gzip alone) only once it has handed the request over: the request's answer could come first (a
  // 415 for a type other than JSON), and one to the parser's fault after it. Which comes first depends
  // on timing (here the contract check's hooks delay the request's own; see the next test).
  for (const codings of ['gzip', 'chunked, gzip', 'gzip, chunked']) {
    for (const contentType of ['', 'Content-Type: text/plain\r\n', 'Content-Type: application/json\r\n']) {
      for (const path of ['/v1/pets', '/v1/store/orders']) {
        const answers = await answersUntilClosed(testApp, `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\n` +
          `${contentType}Transfer-Encoding: ${codings}\r\n\r\n5\r\n{"a":\r\n0\r\n\r\n`)
        const where = `${codings}, ${contentType.trim() || 'no type'}, ${path}`
        assert.equal(answers.length, 1, `${where}: ${answers.join('')}`)
        const [head, answer] = answers[0]!.split('\r\n\r\n')
        assert.match(head!, /^HTTP\/1\.1 400 /, where)
        const { code, message, status } = JSON.parse(answer!)
        assert.deepEqual({ code, status }, { code: 'bad_request', status: 400 }, where)
        const ours = `Transfer-Encoding ${codings} is not accepted; send the body chunked or with a Content-Length, in no other transfer coding`
        // A coding after chunked, or none, leaves the body's length unknown: the parser's fault too.
        if (codings === 'gzip, chunked') assert.equal(message, ours)
        else assert.ok(message === ours || /^The request is not valid HTTP: .*`Transfer-Encoding`/.test(message), `${where}: ${message}`)
      }
    }
  }
})

test('petstore serve gives a body in no chunked coding, which Node refuses after handing the request over, one answer', async (t) => {
  // In its own process the request's 400 is under way when the parser's fault comes, as in production.
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` })
  const { port } = new URL(server.url)
  for (const contentType of ['', 'Content-Type: text/plain\r\n']) {
    const socket = connect(Number(port), '127.0.0.1')
    let received = ''
    socket.setEncoding('latin1').on('data', (chunk: string) => { received += chunk })
    socket.write(`POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n${contentType}Transfer-Encoding: gzip\r\n\r\n{}`)
    assert.ok(await closesWithin(socket, 5000), 'the connection stayed open')
    assert.deepEqual(received.match(/HTTP\/1\.1 \d{3}/g), ['HTTP/1.1 400'], received)
    assert.match(received, /"message":"Transfer-Encoding gzip is not accepted/)
  }
})

test('malformed bytes after an answer under way (an event stream) are dealt with once, however many chunks bring them', async (t) => {
  const testApp = await build(t)
  const warnings: Error[] = []
  const onWarning = (warning: Error) => { warnings.push(warning) }
  process.on('warning', onWarning)
  t.after(() => { process.off('warning', onWarning) })
  const { socket, received } = await openRawConnection(testApp)
  socket.write(`GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nTransfer-Encoding: chunked\r\n\r\n`)
  await untilReceived(received, (text) => text.startsWith('HTTP/1.1 200 '))
  assert.match(received(), /^HTTP\/1\.1 200 /)
  // Node's parser reports its fault again with each chunk: each took a listener on the stream's answer.
  for (let chunk = 0; chunk < 15; chunk++) {
    socket.write('zz\r\n')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(warnings.map(({ name }) => name), [])
  assert.equal(received().match(/HTTP\/1\.1 \d{3}/g)?.length, 1, 'no answer written into the stream')
  socket.destroy()
})

test('a request with a header twice that must come once is a 400, and creates nothing', async (t) => {
  const testApp = await build(t)
  // A proxy in front may read the body as the other Content-Type, route by the other Host or check the
  // other key: Node keeps the first of each; it would join the Idempotency-Keys into one (`k1, k2`).
  const repeated = [
    ['Content-Type', 'content-type: text/plain\r\n'],
    ['Idempotency-Key', 'Idempotency-Key: k1\r\nidempotency-key: k2\r\n'],
    ['Host', 'host: other.example\r\n'],
    ['Authorization', 'authorization: Bearer ps_other\r\n']
  ]
  for (const [name, lines] of repeated) {
    const body = '{"name":"Rex","categoryId":1}'
    const reply = await exchange(testApp, `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: application/json\r\n` +
      `${lines}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
    const [head, answer] = reply.split('\r\n\r\n')
    assert.match(head!, /^HTTP\/1\.1 400 /, answer)
    assert.deepEqual(JSON.parse(answer!), { code: 'bad_request', message: `The request has 2 ${name} headers; send one`, status: 400 })
  }
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).json().length, 0, 'nothing was created')
  // Past 1,000 lines (well within the 16 KiB of headers) Node dropped the rest: the second line got through.
  const padding = Array.from({ length: 1100 }, (_, i) => `x${i}: y\r\n`).join('')
  const padded = await exchange(testApp, `GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${testApp.auth.authorization}\r\n${padding}Authorization: Bearer ps_other\r\n\r\n`)
  assert.match(padded, /^HTTP\/1\.1 400 [^]*"The request has 2 Authorization headers; send one"/)
  // Host on every path, behind a key or not (RFC 9112, section 3.2).
  const reply = await exchange(testApp, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: other.example\r\n\r\n')
  assert.match(reply, /^HTTP\/1\.1 400 [^]*\{"code":"bad_request","message":"The request has 2 Host headers; send one","status":400\}$/)
})

test('a Host header that is no host name or address (with its port) is a 400 (RFC 9112, section 3.2); every valid form is served', async (t) => {
  const testApp = await build(t)
  const answerTo = async (host: string) => await exchange(testApp, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
  for (const host of ['a, b', 'a b', 'pets.example/v1', 'user@pets.example', 'pets.example:80a', '[::1']) {
    assert.match(await answerTo(host), /^HTTP\/1\.1 400 [^]*"The Host header must be a host name or address, with an optional port"/, host)
  }
  for (const host of ['pets.example', 'pets.example:8080', '127.0.0.1:1', '[::1]:8080', '[2001:db8::1]', 'xn--caf-dma.example', '']) {
    assert.match(await answerTo(host), /^HTTP\/1\.1 200 /, host)
  }
})

/** Sends `raw` on a connection of its own and resolves with the answers received until the server closes it. */
async function answersUntilClosed (testApp: TestApp, raw: string | Buffer): Promise<string[]> {
  const { socket, received } = await openRawConnection(testApp)
  socket.write(raw)
  assert.ok(await closesWithin(socket, 5000), `the connection stayed open after ${JSON.stringify(raw.toString('latin1').split('\r\n')[0])}`)
  return received().split(/(?=HTTP\/1\.1 \d{3} )/)
}
