import assert from 'node:assert/strict'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { CLIENT_TYPES_FILE, renderClientTypes } from '../../scripts/generate-client-types.js'
import { createClient, nextCursor, type ExactPaths } from '../../src/client/index.js'
import { build, clientFor, forEachStore } from '../helper.js'

test('the client types match the served OpenAPI document (run `npm run client:generate` when this fails)', async () => {
  assert.equal(readFileSync(CLIENT_TYPES_FILE, 'utf8'), await renderClientTypes())
})

test('`petstore/client` resolves to the built client', async () => {
  const resolved = fileURLToPath(import.meta.resolve('petstore/client'))
  assert.match(resolved, /dist\/client\/index\.js$/)
  assert.ok(existsSync(resolved), 'the build (npm run build, or npm ci) wrote it')
  const module = await import(resolved)
  assert.equal(typeof module.createClient, 'function')
})

test('with int64: bigint, every 2xx answer\'s int64 fields are typed bigint, as they are read', () => {
  // Checked by the compiler (npm test runs tsc): a 202's were typed number, and read as bigint.
  type RetryAnswer = ExactPaths['/webhooks/{webhookId}/deliveries/{deliveryId}/retry']['post']['responses'][202]['content']['application/json']
  const exact: RetryAnswer extends { webhookId: bigint, eventId: bigint } ? true : false = true
  assert.equal(exact, true)
})

test('nextCursor refuses a page paged by `after` (listEvents) rather than end the paging there', () => {
  const eventsPage = new Response('[]', { headers: { link: '</v1/events?after=2&limit=2>; rel="next"' } })
  assert.throws(() => nextCursor(eventsPage), /pages by `after`: read after the last event's id/)
  assert.equal(nextCursor(new Response('[]', { headers: { link: '</v1/pets?limit=2&cursor=AQEA>; rel="next"' } })), 'AQEA')
  assert.equal(nextCursor(new Response('[]')), undefined)
})

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

/** `call`'s promise, with a garbage collection every 10 ms until it settles. */
async function underCollections (call: Promise<unknown>): Promise<unknown> {
  let settled = false
  const collecting = (async () => {
    while (!settled) {
      collectGarbage()
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })()
  try {
    return await call
  } finally {
    settled = true
    await collecting
  }
}

test('a call to a server that takes the connection and never answers throws a TimeoutError past timeoutMs, garbage collections meanwhile (they cut the deadline off: 5 minutes); the caller\'s own signal still aborts it', { timeout: 20_000 }, async (t) => {
  const silent = createServer(() => {}) // takes every request, answers none
  silent.listen(0, '127.0.0.1')
  await once(silent, 'listening')
  t.after(() => { silent.closeAllConnections(); silent.close() })
  const baseUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`
  const calls = {
    number: () => createClient({ baseUrl, apiKey: 'ps_x', timeoutMs: 200 }).POST('/pets', { body: { name: 'Rex', categoryId: 3 } }),
    bigint: () => createClient({ baseUrl, apiKey: 'ps_x', timeoutMs: 200, int64: 'bigint' }).POST('/pets', { body: { name: 'Rex', categoryId: 3n } })
  }
  for (const [int64, call] of Object.entries(calls)) {
    const started = performance.now()
    await assert.rejects(underCollections(call()), { name: 'TimeoutError', message: 'No answer within 200 ms (timeoutMs)' })
    assert.ok(performance.now() - started < 2000, `${int64}: ${performance.now() - started} ms`)
  }
  const patient = createClient({ baseUrl, apiKey: 'ps_x' })
  await assert.rejects(underCollections(patient.GET('/pets', { signal: AbortSignal.timeout(100) })), { name: 'TimeoutError' })
  // Past what a timer takes, as none: setTimeout fired such a deadline at once.
  const unbounded = createClient({ baseUrl, apiKey: 'ps_x', timeoutMs: Infinity })
  await assert.rejects(unbounded.GET('/pets', { signal: AbortSignal.timeout(300) }), { name: 'TimeoutError', message: /operation was aborted due to timeout/ })
  for (const timeoutMs of [-5, Number.NaN]) assert.throws(() => createClient({ baseUrl, apiKey: 'ps_x', timeoutMs }), RangeError)
})

test('a JSON answer whose body stalls throws a TimeoutError past timeoutMs, garbage collections meanwhile; an event stream is read past it', { timeout: 20_000 }, async (t) => {
  let streamPastDeadline: ServerResponse | undefined
  const stalling = createServer((request, response) => {
    if (request.url === '/v1/events/stream') {
      response.writeHead(200, { 'content-type': 'Text/Event-Stream' })
      response.write(': heartbeat\n\n')
      streamPastDeadline = response
      return
    }
    response.writeHead(200, { 'content-type': 'application/json' })
    response.write('[{"id": 1, "na') // and nothing more
  })
  stalling.listen(0, '127.0.0.1')
  await once(stalling, 'listening')
  t.after(() => { stalling.closeAllConnections(); stalling.close() })
  const baseUrl = `http://127.0.0.1:${(stalling.address() as AddressInfo).port}/v1`
  const calls = {
    number: () => createClient({ baseUrl, apiKey: 'ps_x', timeoutMs: 200 }).GET('/pets'),
    bigint: () => createClient({ baseUrl, apiKey: 'ps_x', timeoutMs: 200, int64: 'bigint' }).GET('/pets')
  }
  for (const [int64, call] of Object.entries(calls)) {
    const started = performance.now()
    await assert.rejects(underCollections(call()), { name: 'TimeoutError', message: 'No answer within 200 ms (timeoutMs)' })
    assert.ok(performance.now() - started < 2000, `${int64}: ${performance.now() - started} ms`)
  }
  // The stream's event is sent once the client has seen the deadline pass.
  const started = performance.now()
  const { data, response } = await createClient({ baseUrl, apiKey: 'ps_x', timeoutMs: 1000 }).GET('/events/stream', { parseAs: 'stream' })
  assert.equal(response.status, 200)
  const reader = (data as ReadableStream<Uint8Array>).getReader()
  assert.match(new TextDecoder().decode((await reader.read()).value), /^: heartbeat/)
  await new Promise((resolve) => setTimeout(resolve, 1100 - (performance.now() - started)))
  streamPastDeadline!.end('id: 1\nevent: pet.created\ndata: {}\n\n')
  let rest = ''
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value)
  assert.match(rest, /^id: 1\n/, 'the event sent past the deadline is read')
  // And the caller's signal ends one past the deadline, garbage collections meanwhile.
  const leaving = new AbortController()
  const stream = await createClient({ baseUrl, apiKey: 'ps_x', timeoutMs: 200 }).GET('/events/stream', { parseAs: 'stream', signal: leaving.signal })
  const streamReader = (stream.data as ReadableStream<Uint8Array>).getReader()
  await streamReader.read()
  setTimeout(() => { leaving.abort() }, 400)
  const readToEnd = async () => { while (!(await streamReader.read()).done); }
  await assert.rejects(underCollections(readToEnd()), { name: 'AbortError' })
})

test('with a deadline, an answer keeps its status, URL and redirection, whatever its status (a proxy\'s 999)', async (t) => {
  const server = createServer((request, response) => {
    if (request.url === '/v1/pets/1') response.writeHead(302, { location: '/v1/pets/2' }).end()
    else response.writeHead(999, { 'content-type': 'text/plain' }).end('odd')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.close() })
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  const client = createClient({ baseUrl, apiKey: 'ps_x' })
  const odd = await client.GET('/pets')
  assert.equal(odd.response.status, 999)
  assert.equal(odd.error, 'odd')
  const moved = await client.GET('/pets/{petId}', { params: { path: { petId: 1 } } })
  assert.equal(moved.response.url, `${baseUrl}/pets/2`)
  assert.equal(moved.response.redirected, true)
  assert.equal(moved.response.type, 'basic')
})

test('an error answer without a body leaves `error` undefined, however its end is framed (a Content-Length of 0, or chunks and none with data)', async (t) => {
  const proxy = createServer((request, response) => {
    if (request.url?.endsWith('/1') === true) response.writeHead(503, { 'content-type': 'application/json', 'content-length': '0' }).end()
    else response.writeHead(503, { 'content-type': 'application/json' }).end() // chunked: Node sends no Content-Length
  })
  proxy.listen(0, '127.0.0.1')
  await once(proxy, 'listening')
  t.after(() => { proxy.close() })
  const baseUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`
  const plain = createClient({ baseUrl, apiKey: 'ps_x' })
  const exact = createClient({ baseUrl, apiKey: 'ps_x', int64: 'bigint' })
  for (const petId of [1, 2]) {
    for (const { error, response } of [await plain.GET('/pets/{petId}', { params: { path: { petId } } }), await exact.GET('/pets/{petId}', { params: { path: { petId } } })]) {
      assert.equal(response.status, 503)
      assert.equal(error, undefined, `pet ${petId}`)
    }
  }
})

test('an int64 mode the compiler cannot pin down is refused at createClient (checked by tsc), not made a client none of whose calls compile', () => {
  const mode = (process.env.PETSTORE_TEST_INT64 === 'bigint' ? 'bigint' : 'number') as 'number' | 'bigint'
  // @ts-expect-error: a mode read from the environment is either; the caller picks one by a branch
  const client = createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'ps_x', int64: mode })
  assert.equal(typeof client.GET, 'function', 'at run time the client is made all the same')
})

test('an answer that is not the API\'s (a proxy\'s HTML 502) comes as its text, and `error` is typed so', async (t) => {
  const proxy = createServer((_request, response) => {
    response.writeHead(502, { 'content-type': 'text/html' })
    response.end('<html>Bad Gateway</html>')
  })
  proxy.listen(0, '127.0.0.1')
  await once(proxy, 'listening')
  t.after(() => { proxy.close() })
  const baseUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`
  const plain = await createClient({ baseUrl, apiKey: 'ps_x' }).GET('/pets/{petId}', { params: { path: { petId: 2 } } })
  const exact = await createClient({ baseUrl, apiKey: 'ps_x', int64: 'bigint' }).GET('/pets/{petId}', { params: { path: { petId: 2n } } })
  // Checked by the compiler: typed as the Error body alone, `error.code` compiled and was undefined.
  const typedAsText: [Extract<typeof plain.error | typeof exact.error, string>] extends [never] ? false : true = true
  assert.equal(typedAsText, true)
  for (const { error, response } of [plain, exact]) {
    assert.equal(response.status, 502)
    assert.equal(error, '<html>Bad Gateway</html>')
  }
})

forEachStore((store) => {
  test('the client creates, lists page by page and fetches pets', async (t) => {
    const client = await clientFor(await build(t, { store }))
    const created = []
    for (const name of ['Rex', 'Tom', 'Kitty']) {
      const { data, error, response } = await client.POST('/pets', { body: { name, categoryId: 3 } })
      assert.equal(error, undefined)
      assert.equal(response.status, 201)
      assert.equal(response.headers.get('location'), `/v1/pets/${data!.id}`)
      created.push(data!)
    }
    assert.deepEqual(created.map((pet) => [pet.name, pet.status]), [['Rex', 'available'], ['Tom', 'available'], ['Kitty', 'available']])

    const listed = []
    let cursor: string | undefined
    do {
      const { data, response } = await client.GET('/pets', { params: { query: { limit: 2, ...(cursor === undefined ? {} : { cursor }) } } })
      listed.push(...data!)
      cursor = nextCursor(response)
    } while (cursor !== undefined)
    assert.deepEqual(listed, created)

    const { data: fetched, response } = await client.GET('/pets/{petId}', { params: { path: { petId: created[1]!.id } } })
    assert.deepEqual(fetched, created[1])
    assert.ok(response.headers.get('sunset'))
  })

  test('with int64: bigint, the client reads and writes int64 fields exactly, past 2^53', async (t) => {
    const testApp = await build(t, { store })
    const origin = await testApp.app.listen({ port: 0, host: '127.0.0.1' })
    const client = createClient({ baseUrl: `${origin}/v1`, apiKey: testApp.auth.authorization.slice('Bearer '.length), int64: 'bigint' })
    const largest = 9223372036854775807n
    const { data: created } = await client.POST('/pets', { body: { name: 'Rex', categoryId: largest } })
    const categoryId: bigint = created!.categoryId
    assert.equal(categoryId, largest)
    assert.equal(typeof created!.id, 'bigint')
    const { data: fetched } = await client.GET('/pets/{petId}', { params: { path: { petId: created!.id } } })
    assert.deepEqual(fetched, created)
    const { data: listed } = await client.GET('/pets', { params: { query: { limit: 1 } } })
    assert.deepEqual(listed, [created])
    const { data: missing, error } = await client.GET('/pets/{petId}', { params: { path: { petId: largest } } })
    assert.equal(missing, undefined)
    assert.deepEqual(error, { code: 'not_found', message: `No pet with id ${largest}`, status: 404 })
    // The default client rounds the same body to the nearest double.
    const { data: rounded } = await (await clientFor(testApp)).GET('/pets/{petId}', { params: { path: { petId: Number(created!.id) } } })
    assert.equal(rounded!.categoryId, 9223372036854775808)
  })

  test('the client returns the Error body for errors', async (t) => {
    const client = await clientFor(await build(t, { store }))
    const { data, error, response } = await client.GET('/pets/{petId}', { params: { path: { petId: 999 } } })
    assert.equal(data, undefined)
    assert.equal(response.status, 404)
    assert.deepEqual(error, { code: 'not_found', message: 'No pet with id 999', status: 404 })
  })
})

test('a client made without an API key (an unset variable) is refused at once, naming it: it sent "Bearer undefined" and got a 401 saying the key was revoked', () => {
  for (const apiKey of [undefined, '', '  ']) {
    assert.throws(() => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: apiKey as unknown as string }),
      { name: 'TypeError', message: 'apiKey is missing or empty: give the API key that petstore keys create printed (process.env.API_KEY unset, say)' })
  }
})
