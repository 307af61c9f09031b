import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { test, type TestContext } from 'node:test'
import Fastify from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createLogger } from '../../src/logger.js'
import { requestLoggerFactory } from '../../src/request-logger.js'
import { createKey, createTestStore, defer, TEST_LIMITS } from '../helper.js'

/** A logger at `level`, and its lines as objects, each there once the call that logged it returns. */
function collectedLogger (level: string) {
  const lines: Array<Record<string, unknown>> = []
  const output = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  return { logger: createLogger(level, 'json', output), lines }
}

/** The service at `level`, its log lines, and how many child loggers pino made for its requests. */
async function loggedApp (t: TestContext, level: string, logRequests: 'on' | 'off' = 'off') {
  const { logger, lines } = collectedLogger(level)
  const children = { made: 0 }
  // A child's prototype is its parent: every logger made from this one calls this `child`, on itself.
  const child = logger.child
  logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
    children.made++
    return child.apply(this, args)
  } as typeof child
  const { store, db, databaseUrl } = await createTestStore(t)
  // No line per request, as where stdout is not a terminal (`auto` would turn them on on one).
  const config = loadConfig({ DATABASE_URL: databaseUrl, LOG_REQUESTS: logRequests })
  const app = await buildApp({ config, store, logger, limits: TEST_LIMITS })
  defer(t, () => app.close())
  const { key } = await createKey(db)
  await app.ready()
  children.made = 0 // those the service made for itself
  return { app, db, lines, children, headers: { authorization: `Bearer ${key}` } }
}

test('a request that writes no log line makes no child logger; one that fails logs with its request id', async (t) => {
  const { app, db, lines, children, headers } = await loggedApp(t, 'info')
  assert.equal((await app.inject({ url: '/v1/pets', headers })).statusCode, 200)
  assert.equal((await app.inject({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId: 1 } })).statusCode, 201)
  assert.equal(children.made, 0, 'a child logger for requests that logged nothing')

  await db.schema.dropTable('pets').execute() // a 500, logged with its error
  const failed = await app.inject({ url: '/v1/pets', headers })
  assert.equal(failed.statusCode, 500)
  const requestId = /request id ([\w-]+)/.exec(failed.json<{ message: string }>().message)?.[1]
  assert.ok(requestId !== undefined, failed.body)
  const line = lines.find(({ msg }) => msg === 'request failed')
  assert.equal(line?.reqId, requestId)
  assert.equal(children.made, 1)
})

test('with LOG_REQUESTS on, the requests the router refuses before any route (a path not UTF-8, an id too long) get their line too', async (t) => {
  const { app, lines, headers } = await loggedApp(t, 'info', 'on')
  for (const [url, status] of [['/v1/pets/%FF', 400], ['/v1/pets/%C0%AF', 400], [`/v1/pets/${'1'.repeat(9000)}`, 414], ['/v1/pets/1', 404]] as const) {
    const response = await app.inject({ url, headers })
    assert.equal(response.statusCode, status, url)
    const line = lines.findLast(({ msg }) => msg === 'request completed')
    assert.deepEqual([line?.url, line?.statusCode], [url, response.statusCode], url)
    assert.equal(typeof line?.reqId, 'string')
  }
})

test('with LOG_REQUESTS on, an event stream gets its line once it ends, closed by its client or by the service', async (t) => {
  const { app, lines, headers } = await loggedApp(t, 'info', 'on')
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/events/stream`
  const streamLines = () => lines.filter(({ msg, url }) => msg === 'request completed' && url === '/v1/events/stream')
  const left = new AbortController()
  assert.equal((await fetch(url, { headers, signal: left.signal })).status, 200)
  assert.equal((await fetch(url, { headers })).status, 200)
  assert.equal(streamLines().length, 0, 'not while open')
  left.abort()
  for (let tries = 0; tries < 250 && streamLines().length === 0; tries++) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.deepEqual(streamLines().map(({ statusCode }) => statusCode), [200], 'the stream its client closed')
  await app.close()
  assert.deepEqual(streamLines().map(({ statusCode }) => statusCode), [200, 200], 'the stream the service ended')
})

test('at debug, a request\'s two lines carry its one request id', async (t) => {
  const { app, lines, headers } = await loggedApp(t, 'debug')
  const response = await app.inject({ url: '/v1/pets', headers })
  assert.equal(response.statusCode, 200, response.body)
  const incoming = lines.find(({ msg }) => msg === 'incoming request')
  const completed = lines.find(({ msg }) => msg === 'request completed')
  assert.match(String(incoming?.reqId), /^[\da-f]{8}-[\da-f]{4}-/)
  assert.equal(completed?.reqId, incoming?.reqId)
})

test('a route\'s own log level holds: its debug lines are written under a logger at info', async (t) => {
  const { logger, lines } = collectedLogger('info')
  // Without Fastify's own lines per request, which would make the child first.
  const app = Fastify({ loggerInstance: logger, childLoggerFactory: requestLoggerFactory, disableRequestLogging: true })
  defer(t, () => app.close())
  app.get('/', { logLevel: 'debug' }, async (request) => {
    request.log.debug('a line at debug')
    return 'ok'
  })
  assert.equal((await app.inject({ url: '/' })).statusCode, 200)
  assert.match(String(lines.find(({ msg }) => msg === 'a line at debug')?.reqId), /^req-/)
})
