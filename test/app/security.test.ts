import assert from 'node:assert/strict'
import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import { setTimeout } from 'node:timers/promises'
import { test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { hashApiKey } from '../../src/api-keys/api-key.service.js'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createLogger } from '../../src/logger.js'
import loadShedding from '../../src/plugins/load-shedding.js'
import { SECURITY_HEADERS } from '../../src/plugins/security-headers.js'
import { newWebhookSecret } from '../../src/webhooks/webhook-signature.js'
import { build, checkAnswers, createKey, createTestStore, defer, errorOf, exchange, openRawConnection, TEST_LIMITS } from '../helper.js'

/** Every character of `text` percent-encoded, as a URL encoder that encodes everything would send it. */
function percentEncoded (text: string): string {
  return [...Buffer.from(text)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('')
}

test('answers carry security headers and no X-Powered-By, errors included', async (t) => {
  const testApp = await build(t)
  for (const request of [{ url: '/v1/pets', headers: testApp.auth }, { url: '/v1/pets' }, { url: '/nowhere' }, { url: '/healthz' }]) {
    const response = await testApp.app.inject(request)
    assert.equal(response.headers['x-content-type-options'], 'nosniff', request.url)
    assert.equal(response.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'")
    assert.equal(response.headers['x-frame-options'], 'DENY')
    assert.equal(response.headers['cross-origin-resource-policy'], 'same-origin')
    assert.match(String(response.headers['strict-transport-security']), /max-age=\d+/)
    assert.equal(response.headers['x-powered-by'], undefined)
  }
})

test('answers Node gives before the app (malformed HTTP, an Expect it cannot meet, CONNECT) carry the security headers too', async (t) => {
  const testApp = await build(t)
  const raws = ['GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n', 'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n']
  for (const raw of raws) {
    const { socket, received } = await openRawConnection(testApp)
    socket.write(raw)
    await once(socket, 'close')
    const head = received().split('\r\n\r\n', 1)[0]!.toLowerCase()
    assert.match(head, /^http\/1\.1 4\d\d /, raw)
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.ok(head.includes(`\r\n${name}: ${value.toLowerCase()}`), `${name} missing from ${head}`)
  }
})

test('requests refused before their route runs (their head, a malformed path, an id too long) get the security headers too', async (t) => {
  const testApp = await build(t)
  const raws = [
    'GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n',
    'GET /healthz HTTP/1.1\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: bad host\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n',
    'POST /v1/pets HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    `GET /v1/pets/%zz HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\nConnection: close\r\n\r\n`,
    `GET /v1/pets/${'1'.repeat(9000)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\nConnection: close\r\n\r\n`
  ]
  for (const raw of raws) {
    const head = (await exchange(testApp, raw)).split('\r\n\r\n', 1)[0]!.toLowerCase()
    assert.match(head, /^http\/1\.1 4\d\d /, raw.slice(0, 40))
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.ok(head.includes(`\r\n${name}: ${value.toLowerCase()}`), `${name} missing from ${head}`)
  }
})

// As long as a key without its `ps_`, in base62, but not a key: its last 6 characters are no checksum of the rest.
const NOT_A_KEY = 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789Ab'
// As long as a webhook secret's base64, without its checksum: no secret.
const NOT_A_SECRET = 'Zm9vYmFyYmF6cXV4cXV1eGZvb2Jhci8r'

test('keys, their hashes, webhook secrets and Authorization headers never reach the logs, in a URL either', async (t) => {
  const logs = new PassThrough()
  let written = ''
  logs.on('data', (chunk) => { written += chunk })
  const { store, db, databaseUrl } = await createTestStore(t)
  const logger = createLogger('trace', 'json', logs)
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store, logger, limits: TEST_LIMITS })
  defer(t, () => app.close())
  checkAnswers(t, app)
  const { key } = await createKey(db)
  // A webhook secret's base64 without its `whsec_`, as Standard Webhooks libraries hold it: one with a `+` or `/`.
  let webhookSecret = newWebhookSecret().slice('whsec_'.length)
  while (!/[+/]/.test(webhookSecret)) webhookSecret = newWebhookSecret().slice('whsec_'.length)
  // A request target in absolute form with credentials in it (`GET http://u:hunter2@host/healthz`), as Node hands it on.
  logger.info({ url: 'http://u:hunter2@api.example.com/healthz' }, 'credentials sent at https://token-1234@api.example.com/v1 and HTTP://User:Password@api.example.com/')
  const wrongKey = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A')
  const requests = [
    { url: '/v1/pets', headers: { authorization: `Bearer ${key}` } },
    { url: '/v1/pets', headers: { authorization: `Bearer ${wrongKey}` } },
    { url: '/v1/pets?limit=0', headers: { authorization: `Bearer ${key}` } },
    { method: 'POST' as const, url: '/v1/pets', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: `{"name":"${key}","bad":1}` },
    { url: '/nowhere', headers: { authorization: `Bearer ${key}` } },
    // Keys (and webhook secrets) put in the URL by mistake: the classic Petstore took `api_key` there.
    { url: `/v1/pets?api_key=${key}` },
    { url: `/v1/pets/${key}`, headers: { authorization: `Bearer ${key}` } },
    { url: '/v1/pets?secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', headers: { authorization: `Bearer ${key}` } },
    { url: `/v1/pets?secret=whsec_Zm9vYmFyYmF6cXV4cXV1eA%3D%3D&api_key=${key}&again=whsec_Zm9vYmFyYmF6cXV4cXV1eA` },
    // A key pasted where a webhook secret goes: the secret's pattern alone would take only its prefix.
    { url: `/v1/pets?secret=whsec_${key}` },
    // Percent-encoded, in part or whole, as a client's URL encoder may send them.
    { url: `/v1/pets?api_key=ps%5F${key.slice(3)}` },
    { url: `/v1/pets/ps%5f${key.slice(3)}`, headers: { authorization: `Bearer ${key}` } },
    { url: `/v1/pets?x=${percentEncoded(key)}` },
    { url: `/v1/pets?secret=${percentEncoded('whsec_')}MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw` },
    // A key without its prefix (a client that drops it): still a secret, though it lacks `ps_`.
    { url: `/v1/pets?ref=${NOT_A_KEY}` },
    { url: `/v1/pets?api_key=${key.slice(3)}` },
    { url: `/v1/pets/${key.slice(3)}`, headers: { authorization: `Bearer ${key}` } },
    // Glued to other letters and digits (`Bearer` without its space, say): within a longer run.
    { url: `/v1/pets?k=Bearer${key.slice(3)}` },
    { url: `/v1/pets?k=${key.slice(3)}0` },
    // One character percent-encoded, as a client's URL encoder may send it.
    { url: `/v1/pets?k=${key.slice(3, 12)}${percentEncoded(key.slice(12, 13))}${key.slice(13)}` },
    // After a prefix and a few letters: the prefixed pattern, taking them, left too little of the key to tell.
    { url: `/v1/pets?t=ps_${'x'.repeat(37)}${key.slice(3)}` },
    { url: `/v1/pets?ref=${NOT_A_KEY}Zz` },
    { url: `/v1/pets?long=${'Zz'.repeat(65)}${key.slice(3)}` },
    // A webhook secret without its prefix: alone, percent-encoded, glued to other base64 characters.
    { url: `/v1/pets?secret=${webhookSecret}` },
    { url: `/v1/pets?secret=${encodeURIComponent(webhookSecret)}`, headers: { authorization: `Bearer ${key}` } },
    { url: `/v1/pets?s=abc${webhookSecret}xyz/+&t=${NOT_A_SECRET}` },
    // A key cut short (its checksum, which can be worked out again, and a few random characters gone).
    { url: `/v1/pets?token=${key.slice(0, -1)}` },
    { url: `/v1/pets/${key.slice(0, -10)}`, headers: { authorization: `Bearer ${key}` } },
    // A user and password in Host, as in a URL's authority: its debug line quotes the host.
    { url: '/healthz', headers: { host: 'user:Pa55word@127.0.0.1' } }
  ]
  for (const request of requests) await app.inject(request)
  await db.schema.dropTable('pets').execute() // a 500, logged with its error
  const failed = await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })
  assert.equal(failed.statusCode, 500)
  assert.ok(written.includes('request failed'), 'the test saw real log lines')
  assert.ok(written.includes('api_key=[redacted]'), 'the line is kept, the key in it redacted')
  assert.ok(written.includes(`ref=${NOT_A_KEY}&`) || written.includes(`ref=${NOT_A_KEY}"`), 'a run as long as a key without its prefix, but without its checksum, is kept')
  assert.ok(written.includes(`ref=${NOT_A_KEY}Zz`), 'so is a longer one holding no key')
  assert.ok(written.includes('long=[redacted]'), 'a key at the end of a long run')
  assert.ok(written.includes(`t=${NOT_A_SECRET}`), 'a run as long as a webhook secret, without its checksum, is kept')
  assert.ok(written.includes('http://[redacted]@api.example.com/healthz') && written.includes('https://[redacted]@api.example.com/v1') &&
    written.includes('HTTP://[redacted]@api.example.com/') && written.includes('"host":"[redacted]@127.0.0.1"'), 'a URL\'s credentials are redacted, the rest kept')
  for (const secret of [key, wrongKey, hashApiKey(key), key.slice(3, 20), key.slice(20, 30), 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'Zm9vYmFyYmF6cXV4cXV1eA', percentEncoded(key.slice(3, 20)), 'hunter2', 'token-1234', 'Password', 'Pa55word', webhookSecret, encodeURIComponent(webhookSecret)]) {
    assert.ok(!written.includes(secret), 'a secret was logged')
  }
  assert.doesNotMatch(written, /bearer/i)
})

test('keys and webhook secrets a request puts where they do not belong are not quoted back in its error answer', async (t) => {
  const testApp = await build(t)
  const key = testApp.auth.authorization.slice('Bearer '.length)
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
  const create = (payload: string, contentType = 'application/json') => ({ method: 'POST' as const, url: '/v1/pets', headers: { ...testApp.auth, 'content-type': contentType }, payload })
  const requests = [
    { url: `/v1/pets?${key}=1`, headers: testApp.auth },
    { url: `/v1/pets?ps%5F${key.slice(3)}=1`, headers: testApp.auth },
    { url: `/v1/pets?${key.slice(0, -6)}=1`, headers: testApp.auth },
    create(`{"name":"a","categoryId":1,"${key}":1}`),
    create(`{"name":"a","categoryId":1,"${secret}":1}`),
    // A name cut to its first characters: cut before the key is redacted, its first part would be quoted.
    create(`{"name":"a","categoryId":1,"${'x'.repeat(40)}${key}":1}`),
    create('{}', `text/${key}`),
    // A fragment, quoted cut to its first characters.
    { method: 'POST' as const, url: '/v1/webhooks', headers: testApp.auth, payload: { url: `https://hooks.example.com/#${'x'.repeat(40)}${key}`, events: ['*'] } }
  ]
  const answers = await Promise.all(requests.map(async (request) => {
    const response = await testApp.app.inject(request)
    assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${request.url}: ${response.statusCode}`)
    return response.body
  }))
  answers.push(await exchange(testApp, `GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: ${key}\r\n\r\n`))
  for (const answer of answers) {
    assert.match(answer, /\[redacted\]/, 'the answer quotes what was sent, the secret in it redacted')
    for (const part of [key.slice(3, 20), key.slice(20, 30), secret.slice(6)]) assert.ok(!answer.includes(part), `a secret was quoted: ${answer}`)
  }
})

test('an event loop blocked while the service starts is not overload: the first request once ready is served', async (t) => {
  const app = Fastify()
  defer(t, () => app.close())
  await app.register(loadShedding, { maxEventLoopDelayMs: 50 })
  await app.register(async () => { await blockUntilUnderPressure(app) }) // start-up work: compiling, opening the store
  app.get('/', async () => 'served')
  await app.ready()
  assert.ok(app.isUnderPressure())
  assert.equal((await app.inject({ url: '/' })).statusCode, 200)
})

test('an event loop blocked past its limit sheds load with a 503 and Retry-After', async (t) => {
  const testApp = await build(t, { limits: { maxEventLoopDelayMs: 50 } })
  await testApp.app.ready()
  await blockUntilUnderPressure(testApp.app)
  // Both sent within this turn's microtasks, before the next sample can lift the pressure.
  const [response, liveness] = await Promise.all([testApp.app.inject({ url: '/v1/pets', headers: testApp.auth }), testApp.app.inject({ url: '/healthz' })])
  assert.equal(response.statusCode, 503)
  assert.equal(errorOf(response).code, 'service_unavailable')
  assert.equal(response.headers['retry-after'], '1')
  assert.equal(liveness.statusCode, 200, 'liveness is answered: an instance that is only busy must not be restarted for it')
})

/**
 * Blocks the event loop turn after turn, as a saturated process does, at least once and until the load
 * sampler has seen it: one block alone may go unseen, as when the sampler runs before the loop's delay
 * histogram has recorded it, the sampler's reset drops it. Each block is longer than the time load
 * shedding waits after start-up, and the timers due by then have run when this returns.
 */
async function blockUntilUnderPressure (app: FastifyInstance): Promise<void> {
  const giveUp = Date.now() + 1000
  do {
    assert.ok(Date.now() < giveUp, 'the load sampler never saw the blocked loop')
    const until = Date.now() + 100
    while (Date.now() < until) { /* busy */ }
    await setTimeout(1)
  } while (!app.isUnderPressure())
}
