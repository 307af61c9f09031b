import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { revokeApiKey } from '../../src/api-keys/api-key.repository.js'
import { ApiKeyVerifier } from '../../src/api-keys/api-key.verifier.js'
import { buildApp, EVENT_STREAM_OUTAGE } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { systemClock } from '../../src/clock.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import type { Db } from '../../src/db/database.js'
import { EventStreams, type EventStreamLimits } from '../../src/events/event-streams.js'
import type { EventType } from '../../src/events/event.schemas.js'
import { createLogger } from '../../src/logger.js'
import { createCuttableProxy } from '../cuttable-proxy.js'
import { noteLogReads } from './log-reads.js'
import { build, checkAnswers, createKey, createPet, defer, errorOf, exchange, forEachStore, openTestStore, TEST_LIMITS, TEST_STORES, type TestApp } from '../helper.js'

interface Message { id?: string, event?: string, data?: string, comment?: string }

/** An SSE connection read as a browser's EventSource would, message by message. */
interface OpenStream {
  status: number
  headers: Headers
  messages: Message[]
  /** Resolves when the server ends the stream. */
  ended: Promise<void>
  close: () => void
  waitFor: (done: (messages: Message[]) => boolean, what: string, timeoutMs?: number) => Promise<void>
}

const origins = new WeakMap<TestApp['app'], Promise<string>>()

/** Where the app listens, on a free loopback port; listening once however many streams open at once. */
async function originOf ({ app }: { app: TestApp['app'] }): Promise<string> {
  let origin = origins.get(app)
  if (origin === undefined) {
    const listening = app.server.listening ? Promise.resolve() : app.listen({ port: 0, host: '127.0.0.1' })
    origin = listening.then(() => `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
    origins.set(app, origin)
  }
  return await origin
}

async function openStream (app: TestApp['app'], authorization: Record<string, string>, query = '', headers: Record<string, string> = {}): Promise<OpenStream> {
  const controller = new AbortController()
  const response = await fetch(`${await originOf({ app })}/v1/events/stream${query}`, { headers: { ...authorization, ...headers }, signal: controller.signal })
  const messages: Message[] = []
  const ended = (async () => {
    if (response.body === null) return
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true })
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          messages.push(parse(buffer.slice(0, end)))
          buffer = buffer.slice(end + 2)
        }
      }
    } catch {
      // aborted by the test
    }
  })()
  const waitFor = async (done: (messages: Message[]) => boolean, what: string, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs
    while (!done(messages)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(messages)}`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  return { status: response.status, headers: response.headers, messages, ended, close: () => { controller.abort() }, waitFor }
}

function parse (block: string): Message {
  const message: Message = {}
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) message.comment = line.slice(1).trim()
    else {
      const colon = line.indexOf(':')
      message[line.slice(0, colon) as 'id' | 'event' | 'data'] = line.slice(colon + 1).trimStart()
    }
  }
  return message
}

async function withinSeconds<T> (seconds: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`no ${what} within ${seconds} s`)) }, seconds * 1000) })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

const eventsOf = (messages: Message[]) => messages.filter((message) => message.id !== undefined)
const idsOf = (messages: Message[]) => eventsOf(messages).map((message) => Number(message.id))

async function allEventIds (testApp: TestApp): Promise<number[]> {
  const page = await testApp.app.inject({ url: '/v1/events?limit=1000', headers: testApp.auth })
  return page.json().map((event: { id: number }) => event.id)
}

/**
 * EventStreams of their own on `db`, as an instance's are, served on a loopback port: each request
 * opens a stream after its `after` (0 without), of the types given, after `firstWrite` if given. `open(after)` connects a client;
 * `closed()` resolves when the next stream the server holds closes; `failures` are the store's.
 */
async function servedStreams (t: TestContext, testApp: TestApp, db: Db, limits: Partial<EventStreamLimits>, types?: ReadonlySet<EventType>, firstWrite?: string) {
  const verifier = new ApiKeyVerifier(testApp.db, systemClock)
  defer(t, () => verifier.close())
  const failures: unknown[] = []
  const streams = new EventStreams(db, verifier, {
    pollMs: 60_000, heartbeatMs: 60_000, keyCheckMs: 60_000, maxBufferedBytes: 1 << 20, maxPerKey: 2, readStepIds: 10_000, ...limits
  }, (error) => { failures.push(error) })
  const closing: Array<() => void> = []
  const responses: ServerResponse[] = []
  const endings = new Map<ServerResponse, { at: number, waiting: number, calls: number }>()
  const server = createServer((request, response) => {
    responses.push(response)
    // When it is first ended, with how much still waiting for its reader, and how often it is ended.
    const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse
    response.end = ((...args: unknown[]) => {
      const ending = endings.get(response) ?? { at: Date.now(), waiting: response.writableLength, calls: 0 }
      endings.set(response, { ...ending, calls: ending.calls + 1 })
      return end(...args)
    }) as typeof response.end
    response.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders()
    if (firstWrite !== undefined) response.write(firstWrite)
    assert.ok(streams.reserve(1n))
    streams.open(response, { apiKeyId: 1n, token: 'unused', types, after: BigInt(new URL(request.url!, 'http://x').searchParams.get('after') ?? 0) })
    response.on('close', () => { closing.shift()?.() })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  defer(t, () => new Promise((resolve) => { streams.closeAll(); server.close(resolve) }))
  const open = async (after = 0n) => await new Promise<IncomingMessage>((resolve, reject) => {
    get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/?after=${after}`, resolve).on('error', reject)
  })
  const closed = async () => { await new Promise<void>((resolve) => { closing.push(resolve) }) }
  return { open, closed, failures, responses, endings }
}

forEachStore((store) => {
  test('a stream sends the events after ?after, then each new one as id, event and data, marked beta', async (t) => {
    const testApp = await build(t, { store })
    for (const name of ['A', 'B']) await createPet(testApp, { name, categoryId: 1 })
    const stream = await openStream(testApp.app, testApp.auth, '?after=0')
    defer(t, stream.close)
    assert.equal(stream.status, 200)
    assert.equal(stream.headers.get('content-type'), 'text/event-stream; charset=utf-8')
    assert.equal(stream.headers.get('api-stability'), 'beta')
    assert.equal(stream.headers.get('cache-control'), 'no-store')
    await stream.waitFor((messages) => eventsOf(messages).length === 2, 'the two events kept')
    const live = await createPet(testApp, { name: 'C', categoryId: 1 })
    await stream.waitFor((messages) => eventsOf(messages).length === 3, 'the new event')

    const feed = (await testApp.app.inject({ url: '/v1/events', headers: testApp.auth })).json()
    assert.deepEqual(eventsOf(stream.messages), feed.map((event: { id: number, type: string }) => ({ id: String(event.id), event: event.type, data: JSON.stringify(event) })))
    assert.deepEqual(JSON.parse(eventsOf(stream.messages)[2]!.data!).data, live)
  })

  test('resumed with Last-Event-ID after a disconnect in the middle of a burst, a stream sees every event once, in order', async (t) => {
    const testApp = await build(t, { store })
    const first = await openStream(testApp.app, testApp.auth, '?after=0')
    const burst = Promise.all(Array.from({ length: 120 }, (_, i) => createPet(testApp, { name: `Pet ${i}`, categoryId: 1 })))
    await first.waitFor((messages) => eventsOf(messages).length >= 30, 'part of the burst')
    first.close()
    const received = idsOf(first.messages)
    const second = await openStream(testApp.app, testApp.auth, '?after=0', { 'last-event-id': String(received.at(-1)) })
    defer(t, second.close)
    await burst
    await second.waitFor((messages) => received.length + eventsOf(messages).length >= 120, 'the rest of the burst')
    assert.deepEqual([...received, ...idsOf(second.messages)], await allEventIds(testApp))
  })

  test('a burst of 1,000 creates reaches each of 100 open streams, in order', async (t) => {
    const testApp = await build(t, { store, env: { MAX_STREAMS_PER_KEY: '100', RATE_LIMIT_PER_MINUTE: '0' } })
    const streams = await Promise.all(Array.from({ length: 100 }, () => openStream(testApp.app, testApp.auth)))
    for (const stream of streams) defer(t, stream.close)
    await Promise.all(Array.from({ length: 1000 }, (_, i) => testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: `Pet ${i}`, categoryId: 1 } })))
    const all = await allEventIds(testApp)
    assert.equal(all.length, 1000)
    for (const stream of streams) await stream.waitFor((messages) => eventsOf(messages).length === 1000, 'the burst', 20_000)
    for (const stream of streams) assert.deepEqual(idsOf(stream.messages), all)
  })

  test('a stream filters by type, and one opened without a position starts with the next event', async (t) => {
    const testApp = await build(t, { store })
    await createPet(testApp, { name: 'Before', categoryId: 1 })
    const categories = await openStream(testApp.app, testApp.auth, '?type=category.created')
    defer(t, categories.close)
    const everything = await openStream(testApp.app, testApp.auth)
    defer(t, everything.close)
    await createPet(testApp, { name: 'After', categoryId: 1 })
    await testApp.app.inject({ method: 'POST', url: '/v1/categories', headers: testApp.auth, payload: { name: 'Dogs' } })
    await everything.waitFor((messages) => eventsOf(messages).length === 2, 'the two new events')
    await categories.waitFor((messages) => eventsOf(messages).length === 1, 'the category')
    assert.deepEqual(eventsOf(everything.messages).map((message) => message.event), ['pet.created', 'category.created'])
    assert.equal(eventsOf(categories.messages)[0]!.event, 'category.created')
  })

  test('a stream of a type rare in a long log catches up through it in steps, with each event of its type once, in order, then goes live', async (t) => {
    const testApp = await build(t, { store, limits: { eventReadStepIds: 50 } })
    const category = async (name: string) => {
      const created = await testApp.app.inject({ method: 'POST', url: '/v1/categories', headers: testApp.auth, payload: { name } })
      assert.equal(created.statusCode, 201)
    }
    const pets = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const }))
    // Categories at the log's start, in its middle, in the last step before its end, and past it.
    await category('First')
    await testApp.store.pets.insertMany(pets(500))
    await category('Middle')
    await testApp.store.pets.insertMany(pets(530))
    await category('Last')
    await testApp.store.pets.insertMany(pets(3))
    const stream = await openStream(testApp.app, testApp.auth, '?after=0&type=category.created')
    defer(t, stream.close)
    await stream.waitFor((messages) => eventsOf(messages).length === 3, 'the three categories of the log')
    await category('Live')
    await stream.waitFor((messages) => eventsOf(messages).length === 4, 'the category created once the stream is live')
    assert.deepEqual(eventsOf(stream.messages).map(({ data }) => JSON.parse(data!).data.name), ['First', 'Middle', 'Last', 'Live'])
    const ids = idsOf(stream.messages)
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b))
  })

  test('a stream\'s catch-up asks the store for its types alone, lets the loop turn between its reads, and stops when its client leaves', async (t) => {
    const testApp = await build(t, { store })
    await testApp.store.pets.insertMany(Array.from({ length: 2000 }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const })))
    const { db, reads } = noteLogReads(t, testApp.db)
    const { open, failures } = await servedStreams(t, testApp, db, { readStepIds: 10 }, new Set(['order.placed']))
    const response = await open()
    const deadline = Date.now() + 5000
    while (reads.length < 3 && Date.now() < deadline) await new Promise((resolve) => { setImmediate(resolve) })
    response.destroy()
    // The client is gone: wait for the reads to stop.
    let count = -1
    while (count !== reads.length) {
      count = reads.length
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.deepEqual(failures, [])
    assert.ok(reads.length >= 3, `${reads.length} reads`)
    assert.ok(reads.every(({ typed }) => typed), 'each read asks for the stream\'s types')
    assert.ok(reads.every(({ bounded }) => bounded), 'each read stops at a step\'s end, the last too, read once the client had left')
    assert.ok(reads.every(({ turn }, i) => i === 0 || turn > reads[i - 1]!.turn), `a turn between reads: ${JSON.stringify(reads.slice(0, 10))}`)
    assert.ok(reads.length < 150, `the 200 steps of the log were not all read once the client had left: ${reads.length} reads`)
  })

  test('a stream whose client leaves while the log\'s end is read leaves no head behind: the next stream\'s poller reads on from the log\'s end then, not from that one', async (t) => {
    const testApp = await build(t, { store })
    await createPet(testApp, { name: 'Before', categoryId: 1 })
    // The look for the log's end (the newest id: no filter) answers only once let go.
    let letGo = () => {}
    const held = new Promise<void>((resolve) => { letGo = resolve })
    let holding = true
    const { db: noting, reads } = noteLogReads(t, testApp.db)
    const db = noting.withPlugin({
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        if (holding && result.rows.length === 1 && Object.keys(result.rows[0]!).join() === 'id') await held
        return result
      }
    })
    const { open, closed, failures } = await servedStreams(t, testApp, db, { pollMs: 20 })
    const firstClosed = closed()
    const first = await open()
    first.destroy()
    await firstClosed
    holding = false
    letGo()
    await new Promise((resolve) => setTimeout(resolve, 50))
    // 1,500 events later, a stream opened after them.
    await testApp.store.pets.insertMany(Array.from({ length: 1500 }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const })))
    const last = BigInt((await testApp.db.selectFrom('events').select((eb) => eb.fn.max('id').as('id')).executeTakeFirstOrThrow()).id as number | bigint)
    const readsBefore = reads.length
    const second = await open(last)
    defer(t, () => second.destroy())
    await new Promise((resolve) => setTimeout(resolve, 300))
    const below = reads.slice(readsBefore).filter((read) => read.after < Number(last))
    assert.deepEqual(below.map((read) => read.after), [], 'reads of the log from before the second stream opened')
    assert.deepEqual(failures, [])
  })

  test('the poller writes a page to each live stream as one chunk, the same Buffer for the streams that filter alike', async (t) => {
    const testApp = await build(t, { store })
    const { open, failures, responses } = await servedStreams(t, testApp, testApp.db, { pollMs: 20 })
    const clients = [await open(), await open()]
    const texts = clients.map((client) => {
      defer(t, () => client.destroy())
      const text = { all: '' }
      client.setEncoding('utf8').on('data', (chunk: string) => { text.all += chunk })
      return text
    })
    await createPet(testApp, { name: 'Live', categoryId: 1 })
    const waitForAll = async (name: string) => {
      for (const deadline = Date.now() + 5000; !texts.every(({ all }) => all.includes(name));) {
        assert.ok(Date.now() < deadline, `no ${name} within 5 s`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    await waitForAll('"Live"')
    const written: unknown[][] = responses.map((response) => {
      const chunks: unknown[] = []
      const write = response.write.bind(response) as (chunk: unknown) => boolean
      response.write = ((chunk: unknown) => { chunks.push(chunk); return write(chunk) }) as typeof response.write
      return chunks
    })
    // Written an event at a time to each stream, a page held about 1.2 MB for each reader that stopped.
    await testApp.store.pets.insertMany(Array.from({ length: 1500 }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const })))
    await waitForAll('"Pet 1499"')
    const [first, second] = written as [unknown[], unknown[]]
    assert.ok(first.length >= 2 && first.length <= 3, `${first.length} writes for 1,500 events, read 1,000 at a time`)
    assert.equal(second.length, first.length)
    first.forEach((chunk, i) => {
      assert.ok(Buffer.isBuffer(chunk))
      assert.equal(chunk, second[i], `write ${i} is one Buffer for both`)
    })
    assert.equal(texts[0]!.all, texts[1]!.all)
    assert.equal(texts[0]!.all.match(/^id: /gm)!.length, 1501)
    assert.deepEqual(failures, [])
  })

  test('a stream ended while its reader is stopped (reset, or its key refused) is cut after a heartbeat\'s time, once: what was sent to it is not held for the connection\'s life', async (t) => {
    const testApp = await build(t, { store })
    // A comment line larger than loopback's socket buffers hold (some 10 to 40 MB): the rest waits in
    // the service, and the stream, once ended, cannot finish by itself.
    const unread = `:${'x'.repeat(64 << 20)}\n\n`
    // Its key ("unused") is refused at each check; or it is reset, past a small bound, at the first event.
    for (const [cause, limits] of [['reset', { maxBufferedBytes: 1024 }], ['key refused', { keyCheckMs: 100 }]] as const) {
      const { open, failures, responses, endings } = await servedStreams(t, testApp, testApp.db, { pollMs: 20, heartbeatMs: 500, ...limits }, undefined, unread)
      const client = await open()
      defer(t, () => client.destroy())
      client.pause()
      const [served] = responses as [ServerResponse]
      const closed = new Promise((resolve) => served.on('close', resolve))
      if (cause === 'reset') {
        // Once the stream has caught up with the (empty) log: an event read by its catch-up would wait for the reader instead.
        await new Promise((resolve) => setTimeout(resolve, 100))
        await createPet(testApp, { name: 'Unread', categoryId: 1 })
      }
      for (const deadline = Date.now() + 10_000; !endings.has(served);) {
        assert.ok(Date.now() < deadline, `not ended within 10 s (${cause})`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const { at, waiting } = endings.get(served)!
      assert.ok(waiting > 0, `nothing was left for the reader to take at the end (${cause}): the test needs more than loopback holds`)
      await withinSeconds(3, closed, `cut of the connection (${cause})`)
      assert.ok(Date.now() - at >= 450, `cut ${Date.now() - at} ms after the end (${cause})`)
      // Ended once: the key checks after its end (every 100 ms) did not end it again, each with a cut of its own.
      assert.equal(endings.get(served)!.calls, 1, `ends (${cause})`)
      assert.deepEqual(failures, [])
    }
  })

  test('a change made on one instance reaches the stream of another within a second', async (t) => {
    const testApp = await build(t, { store })
    const other = await buildApp({ config: testApp.config, store: openTestStore(t, testApp.config.DATABASE_URL, { poolSize: 4 }), limits: TEST_LIMITS })
    defer(t, () => other.close())
    checkAnswers(t, other)
    const stream = await openStream(other, testApp.auth)
    defer(t, stream.close)
    const started = Date.now()
    await createPet(testApp, { name: 'Elsewhere', categoryId: 1 })
    await stream.waitFor((messages) => eventsOf(messages).length === 1, 'the event made elsewhere', 1000)
    t.diagnostic(`arrived after ${Date.now() - started} ms`)
  })

  test('an idle stream gets heartbeats; a key holds at most MAX_STREAMS_PER_KEY streams', async (t) => {
    const testApp = await build(t, { store, env: { MAX_STREAMS_PER_KEY: '2' }, limits: { eventHeartbeatMs: 50 } })
    const streams = [await openStream(testApp.app, testApp.auth), await openStream(testApp.app, testApp.auth)]
    for (const stream of streams) defer(t, stream.close)
    await streams[0]!.waitFor((messages) => messages.some((message) => message.comment === 'heartbeat'), 'a heartbeat')
    const refused = await testApp.app.inject({ url: '/v1/events/stream', headers: testApp.auth })
    assert.deepEqual(errorOf(refused), { code: 'rate_limited', status: 429, message: 'This API key holds 2 open event streams, the most it may; close one first' })
    const { key } = await createKey(testApp.db, 'other key')
    const together = await Promise.all(Array.from({ length: 5 }, async () => await openStream(testApp.app, { authorization: `Bearer ${key}` })))
    for (const stream of together) defer(t, stream.close)
    assert.deepEqual(together.map((stream) => stream.status).sort(), [200, 200, 429, 429, 429], 'opened together, as many as the limit; the limit is per key')
    streams[0]!.close()
    // Its place is freed once the server sees the connection close: on a loaded machine, past any fixed wait.
    let reopened = await openStream(testApp.app, testApp.auth)
    for (const deadline = Date.now() + 5000; reopened.status === 429 && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      reopened = await openStream(testApp.app, testApp.auth)
    }
    defer(t, reopened.close)
    assert.equal(reopened.status, 200, 'a closed stream frees its place')
  })

  test('streams pipelined on one connection wait for the one before to end: they take none of the key\'s places', async (t) => {
    const testApp = await build(t, { store, env: { MAX_STREAMS_PER_KEY: '2' } })
    const { hostname, port } = new URL(await originOf(testApp))
    const socket = connect(Number(port), hostname)
    defer(t, () => { socket.destroy() })
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
    let parsed = 0
    testApp.app.server.on('request', () => { parsed++ })
    const head = `GET /v1/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`
    socket.write(head.repeat(20))
    const deadline = Date.now() + 5000
    while ((!received.includes(': connected') || parsed < 20) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    assert.match(received, /^HTTP\/1\.1 200 /)
    assert.equal(parsed, 20)
    // The server has all 20 in hand: given a moment, a stream worked on behind the first would hold a place (it did).
    await new Promise((resolve) => setTimeout(resolve, 100))
    const other = await openStream(testApp.app, testApp.auth)
    defer(t, other.close)
    assert.equal(other.status, 200, 'the key\'s second place is free')
  })

  test('a stream ends when its key is revoked, and at once when the service closes', async (t) => {
    const testApp = await build(t, { store, verifierOptions: { cacheTtlMs: 50, cacheMax: 100, usageFlushMs: 60_000 }, limits: { eventKeyCheckMs: 50 } })
    const { id, key } = await createKey(testApp.db, 'revoked soon')
    const revoked = await openStream(testApp.app, { authorization: `Bearer ${key}` })
    const kept = await openStream(testApp.app, testApp.auth)
    await revokeApiKey(testApp.db, id, systemClock)
    await withinSeconds(2, revoked.ended, 'the end of the revoked key\'s stream')

    const started = Date.now()
    await testApp.app.close()
    await withinSeconds(1, kept.ended, 'the end of the stream at close')
    assert.ok(Date.now() - started < 1000, `closed in ${Date.now() - started} ms`)
  })

  test('a reader that keeps up gets every event of a burst larger than its buffer\'s bound, and is not reset', async (t) => {
    const testApp = await build(t, { store })
    const stream = await openStream(testApp.app, testApp.auth, '?after=0')
    defer(t, stream.close)
    await createPet(testApp, { name: 'First', categoryId: 1 })
    await stream.waitFor((messages) => eventsOf(messages).length === 1, 'the first event, once the stream is live')
    // 3,000 events in one commit: some 390 KB, three of the poller's pages, read at once. Its pages
    // were written in one turn, and so held together (see write-coalescing): past the 256 KiB bound.
    await testApp.store.pets.insertMany(Array.from({ length: 3000 }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const })))
    await stream.waitFor((messages) => eventsOf(messages).length === 3001 || messages.some(({ event }) => event === 'stream.reset'), 'the burst')
    assert.deepEqual(stream.messages.filter(({ event }) => event === 'stream.reset'), [])
    const ids = idsOf(stream.messages)
    assert.deepEqual(ids, [...new Set(ids)].sort((a, b) => a - b), 'each once, in order')
  })

  test('a reader that falls too far behind is reset with where to resume, and holds no writer', async (t) => {
    const testApp = await build(t, { store, limits: { eventStreamBufferBytes: 1024 } })
    let served: ServerResponse | undefined
    testApp.app.server.on('request', (request: IncomingMessage, response: ServerResponse) => { if (request.url!.startsWith('/v1/events/stream')) served = response })
    // A client that stops reading: its socket fills, then the server's buffer for it.
    const url = `${await originOf(testApp)}/v1/events/stream?after=0`
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      get(url, { headers: testApp.auth }, resolve).on('error', reject)
    })
    defer(t, () => response.destroy())
    assert.equal(response.statusCode, 200)
    response.pause()
    const started = Date.now()
    // More than loopback's socket buffers hold.
    await testApp.store.pets.insertMany(Array.from({ length: 40_000 }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const })))
    const created = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: 'Writer', categoryId: 1 } })
    assert.equal(created.statusCode, 201)
    t.diagnostic(`40,000 pets and one more stored in ${Date.now() - started} ms while the reader was stopped`)
    // Reset while it is stopped: a reader that reads again in time takes what was sent, and goes on.
    for (const deadline = Date.now() + 10_000; served?.writableEnded !== true && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 20))

    let text = ''
    response.setEncoding('utf8')
    response.on('data', (chunk: string) => { text += chunk })
    response.resume()
    await withinSeconds(10, new Promise((resolve) => response.on('end', resolve)), 'the reset')
    const messages = text.split('\n\n').filter((block) => block !== '').map(parse)
    const last = messages.at(-1)!
    assert.equal(last.event, 'stream.reset')
    const { after, message } = JSON.parse(last.data!)
    assert.equal(after, idsOf(messages).at(-1))
    assert.equal(message, `The stream fell too far behind and was closed: read GET /v1/events?after=${after} to catch up, then open a stream again`)
    assert.ok(eventsOf(messages).length < 40_001, `${eventsOf(messages).length} events were sent before the reset`)
  })

  test('a stream opened without after, when every event has been deleted for its age, starts after the last one deleted', async (t) => {
    const testApp = await build(t, { store })
    for (const name of ['A', 'B']) await createPet(testApp, { name, categoryId: 1 })
    // As the pruner leaves a log whose every event is older than the retention.
    const last = (await allEventIds(testApp)).at(-1)!
    await testApp.db.deleteFrom('events').execute()
    await testApp.db.updateTable('settings').set({ value: String(last) }).where('name', '=', 'events_pruned_through').execute()
    // It was reset at once ("fell too far behind"), and told to read from 0, which is a 410.
    const stream = await openStream(testApp.app, testApp.auth)
    defer(t, stream.close)
    await createPet(testApp, { name: 'C', categoryId: 1 })
    await stream.waitFor((messages) => eventsOf(messages).length === 1, 'the new event')
    assert.deepEqual(idsOf(stream.messages), [last + 1])
    assert.equal(stream.messages.some((message) => message.event === 'stream.reset'), false)
  })

  test('Last-Event-ID and after are checked: malformed is 400, pruned is 410', async (t) => {
    const testApp = await build(t, { store })
    for (const [query, headers] of [['?after=-1', {}], ['', { 'last-event-id': 'abc' }], ['?type=pet.deleted', {}]] as const) {
      const bad = await testApp.app.inject({ url: `/v1/events/stream${query}`, headers: { ...testApp.auth, ...headers } })
      assert.equal(errorOf(bad).code, 'validation_failed', `${query} ${JSON.stringify(headers)}`)
    }
    // Node joins its lines into one value, "5, 6", which is no integer: it is told it came twice, as other
    // headers are. Sent over a connection: the test client (inject) joins them before Node sees them.
    const twice = await exchange(testApp, `GET /v1/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\nLast-Event-ID: 5\r\nLast-Event-ID: 6\r\nConnection: close\r\n\r\n`)
    assert.match(twice, /^HTTP\/1\.1 400 /)
    assert.equal(twice.split('\r\n\r\n')[1], '{"code":"bad_request","message":"The request has 2 Last-Event-ID headers; send one","status":400}')
    await testApp.db.updateTable('settings').set({ value: '10' }).where('name', '=', 'events_pruned_through').execute()
    const expired = await testApp.app.inject({ url: '/v1/events/stream', headers: { ...testApp.auth, 'last-event-id': '3' } })
    assert.equal(errorOf(expired).code, 'events_expired')
  })
})

// Only PostgreSQL is reached over a network; an embedded SQLite store has no outage to survive.
for (const store of TEST_STORES.filter((candidate) => candidate.name === 'postgres')) {
  test('through a store outage, a stream that caught up stays open and gets the events committed after it; one opened meanwhile is refused', async (t) => {
    const direct = new URL(await store.databaseUrl(t))
    const proxy = await createCuttableProxy(direct)
    defer(t, () => proxy.close())
    const viaProxyStore = openTestStore(t, proxy.url, { poolSize: 2 })
    await migrateToLatest(viaProxyStore.db)
    const warnings: string[] = []
    const logger = createLogger('warn', 'json', new Writable({ write: (line, _encoding, done) => { warnings.push(JSON.parse(String(line)).msg); done() } }))
    // No report of the failures counted meanwhile, which would be a second line of the kind, in the test's time.
    const app = await buildApp({ config: loadConfig({ DATABASE_URL: proxy.url }), store: viaProxyStore, logger, limits: TEST_LIMITS, outageReportMs: 3_600_000 })
    defer(t, () => app.close())
    const auth = { authorization: `Bearer ${(await createKey(viaProxyStore.db)).key}` }
    const live = await openStream(app, auth)
    defer(t, live.close)
    const first = (await app.inject({ method: 'POST', url: '/v1/pets', headers: auth, payload: { name: 'Before', categoryId: 1 } })).json()
    await live.waitFor((messages) => idsOf(messages).length === 1, 'the event of the pet created before the outage')

    proxy.cut()
    // Within the key's 2 s in the verifier's cache: the key passes, and the stream's first read of the log fails.
    const refused = await app.inject({ url: '/v1/events/stream', headers: auth })
    assert.equal(refused.statusCode, 503)
    assert.equal(errorOf(refused).code, 'service_unavailable')
    await new Promise((resolve) => setTimeout(resolve, 600)) // the poller's reads of the log fail a few times
    assert.ok(warnings.some((message) => message.startsWith(EVENT_STREAM_OUTAGE)), JSON.stringify(warnings))

    proxy.restore()
    let after: { id: number } | undefined
    for (let tries = 0; after === undefined && tries < 50; tries++) {
      const response = await app.inject({ method: 'POST', url: '/v1/pets', headers: auth, payload: { name: 'After', categoryId: 1 } })
      if (response.statusCode === 201) after = response.json()
      else await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.ok(after !== undefined, 'a create once the store is back')
    await live.waitFor((messages) => eventsOf(messages).some((message) => message.data?.includes(`"id":${after!.id}`) === true), 'the event of the pet created after the outage')
    assert.equal(eventsOf(live.messages).length, 2, 'no event lost or sent twice')
    assert.ok(live.messages.every(({ event }) => event !== 'stream.reset'))
    assert.ok(first.id < after.id)

    // A second cut soon after, as an outage that comes and goes: still the one line, its failures counted.
    proxy.cut()
    await new Promise((resolve) => setTimeout(resolve, 600))
    proxy.restore()
    assert.equal(warnings.filter((message) => message.startsWith(EVENT_STREAM_OUTAGE)).length, 1, JSON.stringify(warnings))
  })
}
