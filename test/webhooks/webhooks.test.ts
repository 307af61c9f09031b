import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Webhook } from 'standardwebhooks'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { findSetting } from '../../src/db/settings.repository.js'
import { pruneExpiredEvents } from '../../src/events/expired-event-prune.js'
import { createMetrics } from '../../src/metrics/metrics.js'
import { pruneExpiredDeliveries } from '../../src/webhooks/expired-delivery-prune.js'
import { findOldestOwedPosition } from '../../src/webhooks/webhook-queue.js'
import { queueRedelivery } from '../../src/webhooks/webhook.repository.js'
import { build, checkAnswers, createKey, createPet, createTestStore, defer, errorOf, forEachStore, manualClock, nextLink, openRawConnection, TEST_LIMITS, type TestApp, type TestStore, untilReceived } from '../helper.js'
import { startReceiver, type Received } from './receiver.js'

const LOCAL = { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_PER_MINUTE: '0' }

async function buildWithWebhooks (t: TestContext, store: TestStore, retrySchedule = '100ms,100ms,100ms'): Promise<TestApp> {
  return await build(t, { store, env: { ...LOCAL, WEBHOOK_RETRY_SCHEDULE: retrySchedule }, limits: { webhookPollMs: 20 } })
}

async function subscribe (testApp: TestApp, body: object, headers: Record<string, string> = {}) {
  const response = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...testApp.auth, ...headers }, payload: body })
  assert.equal(response.statusCode, 201, response.body)
  return response
}

async function getWebhook (testApp: TestApp, id: number) {
  const response = await testApp.app.inject({ url: `/v1/webhooks/${id}`, headers: testApp.auth })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

async function deliveries (testApp: TestApp, id: number): Promise<Array<{ id: number, eventId: number, attempt: number, attemptedAt: string, responseStatus: number | null, error: string | null }>> {
  const response = await testApp.app.inject({ url: `/v1/webhooks/${id}/deliveries?limit=100`, headers: testApp.auth })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

async function patch (testApp: TestApp, id: number, payload: object) {
  const response = await testApp.app.inject({ method: 'PATCH', url: `/v1/webhooks/${id}`, headers: testApp.auth, payload })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

async function until (what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await sleep(20)
  }
}

/**
 * A subscription to every event, at a receiver that fails the schedule's three attempts at a new pet's
 * event (of 50ms,50ms), the last one held on its way until `release()`.
 */
async function lastAttemptOnItsWay (t: TestContext, testApp: TestApp) {
  const receiver = await startReceiver(t)
  receiver.answers.push(500, 500, 500)
  const releases: Array<() => void> = []
  receiver.hold = (request) => request === 3 ? new Promise<void>((resolve) => { releases.push(resolve) }) : undefined
  const { id } = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json()
  await createPet(testApp, { name: 'Rex', categoryId: 3 })
  await receiver.waitFor(3)
  return { receiver, id, release: () => { for (const release of releases) release() } }
}

function verify (secret: string, { headers, body }: Received): unknown {
  return new Webhook(secret).verify(body, headers as Record<string, string>)
}

forEachStore((store) => {
  test('a delivery is the event as in the feed, signed so that the standardwebhooks library verifies it', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const receiver = await startReceiver(t)
    const before = await createPet(testApp, { name: 'Before', categoryId: 1 })
    const { secret, id } = (await subscribe(testApp, { url: receiver.url, events: ['pet.created'], description: 'stock' })).json()
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/)
    const rex = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await testApp.app.inject({ method: 'POST', url: '/v1/categories', headers: testApp.auth, payload: { name: 'Dogs' } })
    const tom = await createPet(testApp, { name: 'Tom', categoryId: 2 })

    const [first, second] = await receiver.waitFor(2)
    await sleep(200)
    assert.equal(receiver.received.length, 2, 'only the events of its types, and only those after it was made')
    const feed = (await testApp.app.inject({ url: '/v1/events?type=pet.created', headers: testApp.auth })).json()
    assert.deepEqual(feed.map((event: { data: { id: number } }) => event.data.id), [before.id, rex.id, tom.id])
    assert.deepEqual(JSON.parse(first!.body), feed[1], 'the body is the event as the feed gives it')
    assert.deepEqual(JSON.parse(second!.body), feed[2])
    assert.deepEqual(verify(secret, first!), feed[1])
    assert.deepEqual(verify(secret, second!), feed[2])
    const installationId = await findSetting(testApp.db, 'installation_id')
    assert.match(installationId, /^[\w-]{12}$/)
    assert.equal(first!.headers['webhook-id'], `msg_${installationId}_${id}_${feed[1].id}`)
    assert.equal(first!.headers['content-type'], 'application/json')
    assert.throws(() => verify('whsec_' + Buffer.alloc(24).toString('base64'), first!), /No matching signature/, 'another secret does not verify it')
    assert.throws(() => new Webhook(secret).verify(second!.body.replace('Tom', 'Tim'), second!.headers as Record<string, string>), /No matching signature/)

    const log = await deliveries(testApp, id)
    assert.deepEqual(log.map(({ eventId, attempt, responseStatus, error }) => ({ eventId, attempt, responseStatus, error })), [
      { eventId: feed[2].id, attempt: 1, responseStatus: 204, error: null },
      { eventId: feed[1].id, attempt: 1, responseStatus: 204, error: null }
    ])
  })

  test('an operation that takes no body accepts an empty one sent as JSON, as clients that always send Content-Type do', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const { id } = (await subscribe(testApp, { url: 'https://hooks.example.com/a', events: ['*'] })).json()
    const asJson = { ...testApp.auth, 'content-type': 'application/json' }
    const rotated = await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/rotate-secret`, headers: asJson, payload: '' })
    assert.equal(rotated.statusCode, 200, rotated.body)
    const deleted = await testApp.app.inject({ method: 'DELETE', url: `/v1/webhooks/${id}`, headers: asJson, payload: '' })
    assert.equal(deleted.statusCode, 204, deleted.body)
    // An operation that takes one still says it is missing.
    const created = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: asJson, payload: '' })
    assert.deepEqual(errorOf(created), { code: 'invalid_json', message: 'Request body is empty; a JSON object is expected', status: 400 })
  })

  test('an operation that takes no body refuses one with fields, rather than ignore them; `{}` is taken as none', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const { id, secret } = (await subscribe(testApp, { url: 'https://hooks.example.com/a', events: ['*'] })).json()
    const rotate = async (payload: string) => await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/rotate-secret`, headers: { ...testApp.auth, 'content-type': 'application/json' }, payload })
    for (const payload of ['{"secret":"whsec_mine"}', '[]', 'null', '1']) {
      assert.deepEqual(errorOf(await rotate(payload)), { code: 'validation_failed', message: 'This operation takes no body: send none, or an empty object `{}`', status: 400 }, payload)
    }
    const row = await testApp.db.selectFrom('webhooks').select('secret').where('id', '=', BigInt(id)).executeTakeFirstOrThrow()
    assert.equal(row.secret, secret, 'nothing was rotated')
    assert.equal((await rotate('{}')).statusCode, 200)
    assert.equal(errorOf(await rotate('{"secret":')).code, 'invalid_json')
    const deleted = await testApp.app.inject({ method: 'DELETE', url: `/v1/webhooks/${id}`, headers: testApp.auth, payload: { x: 1 } })
    assert.equal(errorOf(deleted).status, 400)
  })

  test('an operation that takes no body accepts an empty one whatever its Content-Type (curl -d \'\' sends a form), and refuses one that is not empty', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const { id } = (await subscribe(testApp, { url: 'https://hooks.example.com/a', events: ['*'] })).json()
    const asForm = { ...testApp.auth, 'content-type': 'application/x-www-form-urlencoded' }
    const rotated = await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/rotate-secret`, headers: asForm, payload: '' })
    assert.equal(rotated.statusCode, 200, rotated.body)
    const refused = await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/rotate-secret`, headers: { ...testApp.auth, 'content-type': 'text/plain' }, payload: 'x' })
    assert.equal(errorOf(refused).status, 415)
    // Chunked, and empty: known only once read.
    const raw = await openRawConnection(testApp)
    raw.socket.write(`DELETE /v1/webhooks/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`)
    await untilReceived(raw.received, (text) => text.includes('\r\n\r\n'))
    raw.socket.destroy()
    assert.match(raw.received(), /^HTTP\/1\.1 204 /)
    // An operation that takes a body still refuses another type, before reading it.
    const created = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: asForm, payload: '' })
    assert.deepEqual(errorOf(created), { code: 'unsupported_media_type', message: "Content-Type application/x-www-form-urlencoded is not accepted; send the body as application/json in UTF-8 (curl -d sends a form unless given -H 'Content-Type: application/json')", status: 415 })
  })

  test('a change committed on this instance is sent at once, not at the next look for work', async (t) => {
    // Looks for work 800 ms apart, and each delivery expected within 200 ms: with the wake turned off,
    // each waited for the next look, 419 to 521 ms here. No real wait in the suite passes 1 s.
    const testApp = await build(t, { store, env: LOCAL, limits: { webhookPollMs: 800 } })
    const receiver = await startReceiver(t)
    await subscribe(testApp, { url: receiver.url, events: ['pet.created'] })
    await sleep(1000) // a look for work has seen the subscription
    const latencies: number[] = []
    for (let i = 0; i < 3; i++) {
      const started = Date.now()
      await createPet(testApp, { name: `Pet ${i}`, categoryId: 1 })
      await receiver.waitFor(i + 1)
      latencies.push(Date.now() - started)
      await sleep(300)
    }
    assert.ok(latencies.every((ms) => ms < 200), `delivered ${latencies.join(', ')} ms after each create, the looks for work being 800 ms apart`)
  })

  test('a receiver that fails twice gets the event a third time with the same webhook-id, and the log shows each attempt', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const receiver = await startReceiver(t)
    receiver.answers.push(500, 503)
    const { id, secret } = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await createPet(testApp, { name: 'Tom', categoryId: 3 })
    const received = await receiver.waitFor(4)
    const ids = received.map(({ headers }) => headers['webhook-id'])
    assert.equal(new Set(ids.slice(0, 3)).size, 1, 'every attempt at one event has its webhook-id')
    assert.notEqual(ids[3], ids[0], 'the next event comes after, in order')
    for (const delivery of received) verify(secret, delivery)
    await until('the last attempt is logged', async () => (await deliveries(testApp, id)).length === 4)
    const log = (await deliveries(testApp, id)).reverse()
    assert.deepEqual(log.map(({ attempt, responseStatus, error }) => ({ attempt, responseStatus, error })), [
      { attempt: 1, responseStatus: 500, error: 'HTTP 500' },
      { attempt: 2, responseStatus: 503, error: 'HTTP 503' },
      { attempt: 3, responseStatus: 204, error: null },
      { attempt: 1, responseStatus: 204, error: null }
    ])
    const webhook = await getWebhook(testApp, id)
    assert.equal(webhook.enabled, true)
    assert.equal(webhook.lastError, 'HTTP 503')
  })

  test('410 disables a subscription at once; enabling it again resumes from the first event not delivered', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const receiver = await startReceiver(t)
    receiver.answers.push(410)
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['pet.created'] })).json()
    const rex = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await receiver.waitFor(1)
    await until('it is disabled', async () => (await getWebhook(testApp, id)).enabled === false)
    const tom = await createPet(testApp, { name: 'Tom', categoryId: 3 })
    await sleep(200)
    assert.equal(receiver.received.length, 1, 'nothing is sent to a disabled subscription')
    const disabled = await getWebhook(testApp, id)
    assert.equal(disabled.disabledReason, 'The receiver answered 410 Gone')
    assert.equal(disabled.lastError, 'HTTP 410')

    const enabled = await patch(testApp, id, { enabled: true })
    assert.equal(enabled.enabled, true)
    assert.equal(enabled.disabledReason, null)
    const received = await receiver.waitFor(3)
    assert.deepEqual(received.map(({ body }) => JSON.parse(body).data.id), [rex.id, rex.id, tom.id])
  })

  test('disabling a subscription stops its deliveries after the one on its way and at most one more; enabling it sends the rest', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const receiver = await startReceiver(t)
    let release: (() => void) | undefined
    receiver.hold = (request) => request === 1 ? new Promise<void>((resolve) => { release = resolve }) : undefined
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['pet.created'] })).json()
    const pets = []
    for (let i = 0; i < 5; i++) pets.push(await createPet(testApp, { name: `Pet ${i}`, categoryId: 1 }))
    await receiver.waitFor(1)
    await patch(testApp, id, { enabled: false })
    release!()
    await sleep(300)
    // The next event, when it was read with the one on its way, leaves while that one's answer is
    // recorded, which finds the subscription disabled: at most that one more.
    assert.ok(receiver.received.length <= 2, `${receiver.received.length} deliveries: none after the one on its way but the next`)
    await patch(testApp, id, { enabled: true })
    const received = await receiver.waitFor(5)
    assert.deepEqual(received.map(({ body }) => JSON.parse(body).data.id), pets.map((pet) => pet.id), 'each once, in order')
  })

  test('when the last retry fails the subscription is disabled with its last error', async (t) => {
    const testApp = await buildWithWebhooks(t, store, '50ms,50ms')
    const receiver = await startReceiver(t)
    receiver.answers.push(500, 502, 500)
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['pet.created'] })).json()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await receiver.waitFor(3)
    await until('it is disabled', async () => (await getWebhook(testApp, id)).enabled === false)
    const webhook = await getWebhook(testApp, id)
    assert.equal(webhook.lastError, 'HTTP 500')
    assert.match(webhook.disabledReason, /^All 3 attempts at event \d+ failed; the last: HTTP 500$/)
    await patch(testApp, id, { enabled: true })
    await receiver.waitFor(4)
    await until('the event is delivered', async () => (await deliveries(testApp, id))[0]?.responseStatus === 204)
  })

  test('a receiver that does not answer fails the attempt after the timeout, and a refused connection is logged', async (t) => {
    const testApp = await build(t, { store, env: { ...LOCAL, WEBHOOK_RETRY_SCHEDULE: '1d' }, limits: { webhookPollMs: 20, webhookTimeoutMs: 300 } })
    const { createServer } = await import('node:net')
    const silent = createServer(() => {}).listen(0, '127.0.0.1')
    t.after(() => { silent.close() })
    await new Promise((resolve) => silent.once('listening', resolve))
    const port = (silent.address() as { port: number }).port
    const { id: hung } = (await subscribe(testApp, { url: `http://127.0.0.1:${port}/hook`, events: ['*'] })).json()
    // Port 1 (tcpmux), on which nothing listens: a port freed by a receiver of this test could be taken
    // meanwhile by a server of a test running beside it, which would answer instead of refusing.
    const { id: refused } = (await subscribe(testApp, { url: 'http://127.0.0.1:1/hook', events: ['*'] })).json()
    const started = Date.now()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await until('both attempts are logged', async () => (await deliveries(testApp, hung)).length === 1 && (await deliveries(testApp, refused)).length === 1)
    assert.ok(Date.now() - started < 5000)
    assert.equal((await deliveries(testApp, hung))[0]!.error, 'no answer within the timeout')
    assert.match((await deliveries(testApp, refused))[0]!.error!, /ECONNREFUSED/)
  })

  test('a 101 answer, a status outside 100 to 599 and a connection closed without an answer are failed attempts, not hangs', async (t) => {
    const testApp = await build(t, { store, env: { ...LOCAL, WEBHOOK_RETRY_SCHEDULE: '1d' }, limits: { webhookPollMs: 20 } })
    const { createServer } = await import('node:net')
    const answering = (statusLine: string) => createServer((socket) => {
      socket.once('data', () => socket.end(`${statusLine}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`))
    })
    const servers = [
      createServer((socket) => { socket.once('data', () => socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n')) }),
      createServer((socket) => { socket.once('data', () => socket.end()) }),
      answering('HTTP/1.1 799 Weird'),
      answering('HTTP/1.1 099 Weird')
    ]
    const ids: number[] = []
    for (const server of servers) {
      server.listen(0, '127.0.0.1')
      t.after(() => { server.close() })
      await new Promise((resolve) => server.once('listening', resolve))
      ids.push((await subscribe(testApp, { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, events: ['*'] })).json().id)
    }
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const [upgraded, closed, high, low] = ids as [number, number, number, number]
    // The log is read through its response schema, which a status it does not allow failed (a 500).
    await until('every attempt is logged', async () => {
      for (const id of ids) if ((await deliveries(testApp, id)).length !== 1) return false
      return true
    }, 5000)
    assert.deepEqual((await deliveries(testApp, upgraded)).map(({ responseStatus, error }) => ({ responseStatus, error })), [
      { responseStatus: 101, error: 'HTTP 101: a switch of protocols is no answer' }
    ])
    assert.match((await deliveries(testApp, closed))[0]!.error!, /hang up|closed without an answer/)
    for (const [id, status] of [[high, 799], [low, 99]] as const) {
      assert.deepEqual((await deliveries(testApp, id)).map(({ responseStatus, error }) => ({ responseStatus, error })), [
        { responseStatus: null, error: `HTTP ${status}: no HTTP status (100 to 599)` }
      ])
    }
    // As an earlier build logged such an attempt: its status kept.
    await testApp.db.updateTable('webhook_deliveries').set({ response_status: 799 }).where('webhook_id', '=', BigInt(high)).execute()
    assert.equal((await deliveries(testApp, high))[0]!.responseStatus, null)
  })

  test('a 2xx is a delivery when its status line comes, whether or not its body ever ends', async (t) => {
    const testApp = await build(t, { store, env: { ...LOCAL, WEBHOOK_RETRY_SCHEDULE: '50ms,1d' }, limits: { webhookPollMs: 20, webhookTimeoutMs: 300 } })
    const { createServer } = await import('node:http')
    const servers = [
      // A body trickled, never ended; and one sent as fast as the socket takes it, never ended.
      createServer((_request, response) => { response.writeHead(200).write('a') }),
      createServer((_request, response) => {
        const flood = () => { while (response.write(Buffer.alloc(65_536))); }
        response.writeHead(202).on('drain', flood)
        flood()
      })
    ]
    const ids: number[] = []
    for (const server of servers) {
      server.listen(0, '127.0.0.1')
      t.after(() => { server.closeAllConnections(); server.close() })
      await new Promise((resolve) => server.once('listening', resolve))
      ids.push((await subscribe(testApp, { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, events: ['pet.created'] })).json().id)
    }
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await until('both attempts are logged', async () => (await deliveries(testApp, ids[0]!)).length === 1 && (await deliveries(testApp, ids[1]!)).length === 1, 5000)
    await sleep(400) // past the timeout and the first retry's wait: nothing more is tried
    for (const [id, status] of [[ids[0]!, 200], [ids[1]!, 202]] as const) {
      assert.deepEqual((await deliveries(testApp, id)).map(({ attempt, responseStatus, error }) => ({ attempt, responseStatus, error })), [
        { attempt: 1, responseStatus: status, error: null }
      ])
    }
  })

  test('enabling an enabled subscription changes nothing; a new URL is tried at once with a fresh count', async (t) => {
    const testApp = await buildWithWebhooks(t, store, '50ms,1d')
    const failing = await startReceiver(t)
    failing.answers.push(500, 500, 500)
    const { id } = (await subscribe(testApp, { url: failing.url, events: ['*'] })).json()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await failing.waitFor(2)
    await until('the second failure is logged', async () => (await deliveries(testApp, id)).length === 2)
    await patch(testApp, id, { enabled: true })
    await sleep(300)
    assert.equal(failing.received.length, 2, 'the next retry stays a day away')
    const healthy = await startReceiver(t)
    await patch(testApp, id, { url: healthy.url })
    await healthy.waitFor(1)
    await until('the delivery is logged', async () => (await deliveries(testApp, id)).length === 3)
    assert.deepEqual((await deliveries(testApp, id)).map(({ attempt, responseStatus }) => ({ attempt, responseStatus })), [
      { attempt: 1, responseStatus: 204 }, { attempt: 2, responseStatus: 500 }, { attempt: 1, responseStatus: 500 }
    ])
  })

  test('the same event types in another order change nothing; other types make the next attempt at once', async (t) => {
    const testApp = await buildWithWebhooks(t, store, '50ms,1d')
    const failing = await startReceiver(t)
    failing.answers.push(500, 500, 500)
    const { id } = (await subscribe(testApp, { url: failing.url, events: ['pet.created', 'pet.status_changed', 'order.placed'] })).json()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await failing.waitFor(2)
    await until('the second failure is logged', async () => (await deliveries(testApp, id)).length === 2)
    for (const events of [['order.placed', 'pet.status_changed', 'pet.created'], ['pet.status_changed', 'pet.created', 'order.placed']]) await patch(testApp, id, { events })
    await sleep(300)
    assert.equal(failing.received.length, 2, 'the next retry stays a day away')
    await patch(testApp, id, { events: ['pet.created', 'order.placed'] })
    await failing.waitFor(3)
  })

  test('a new URL given while an attempt to the old one is on its way wins: the next attempt goes to it at once, as the first, whatever the old one comes to', async (t) => {
    const testApp = await buildWithWebhooks(t, store, '50ms,50ms')
    // Its failure disabled the subscription.
    const { id, release } = await lastAttemptOnItsWay(t, testApp)
    const healthy = await startReceiver(t)
    await patch(testApp, id, { url: healthy.url })
    await healthy.waitFor(1)
    release()
    await createPet(testApp, { name: 'Tom', categoryId: 3 })
    await healthy.waitFor(2)
    assert.deepEqual(healthy.received.map(({ body }) => JSON.parse(body).data.name), ['Rex', 'Tom'])
    // The receiver has the attempt before the service records its answer.
    await until('the attempts are logged', async () => (await deliveries(testApp, id)).length === 4)
    assert.equal((await getWebhook(testApp, id)).enabled, true)
    assert.deepEqual((await deliveries(testApp, id)).map(({ attempt, responseStatus }) => ({ attempt, responseStatus })), [
      { attempt: 1, responseStatus: 204 }, { attempt: 1, responseStatus: 204 }, { attempt: 2, responseStatus: 500 }, { attempt: 1, responseStatus: 500 }
    ], 'the old URL\'s last attempt, on its way at the change, is not recorded')
  })

  for (const [change, patches] of [['given new types', [{ events: ['pet.created'] }]], ['enabled again', [{ enabled: false }, { enabled: true }]]] as const) {
    test(`a subscription ${change} while its last attempt is on its way stays so, whatever that attempt comes to: the next goes at once, as the first`, async (t) => {
      const testApp = await buildWithWebhooks(t, store, '50ms,50ms')
      const { receiver, id, release } = await lastAttemptOnItsWay(t, testApp)
      for (const body of patches) await patch(testApp, id, body)
      release()
      await receiver.waitFor(4)
      await until('the attempts are logged', async () => (await deliveries(testApp, id)).length === 4)
      assert.deepEqual((await deliveries(testApp, id)).map(({ attempt, responseStatus }) => ({ attempt, responseStatus })), [
        { attempt: 1, responseStatus: 204 }, { attempt: 3, responseStatus: 500 }, { attempt: 2, responseStatus: 500 }, { attempt: 1, responseStatus: 500 }
      ])
      const webhook = await getWebhook(testApp, id)
      assert.equal(webhook.enabled, true, webhook.disabledReason)
    })
  }

  test('new types given while a failing attempt is on its way cancel its retry an hour away; an attempt sent after them fails as any other', async (t) => {
    const testApp = await buildWithWebhooks(t, store, '1h')
    const receiver = await startReceiver(t)
    receiver.answers.push(500, 204, 204, 500)
    const releases: Array<() => void> = []
    receiver.hold = (request) => request === 1 || request === 3 ? new Promise<void>((resolve) => { releases.push(resolve) }) : undefined
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await receiver.waitFor(1)
    await patch(testApp, id, { events: ['pet.created'] })
    releases.shift()!()
    await receiver.waitFor(2) // at once, not in an hour
    // Two events read in one batch: the first held while the types change, the second sent after.
    await patch(testApp, id, { enabled: false })
    await createPet(testApp, { name: 'Tom', categoryId: 3 })
    await createPet(testApp, { name: 'Max', categoryId: 3 })
    await patch(testApp, id, { enabled: true })
    await receiver.waitFor(3)
    await patch(testApp, id, { events: ['*'] })
    releases.shift()!()
    await receiver.waitFor(4)
    await until('the attempts are logged', async () => (await deliveries(testApp, id)).length === 4)
    await sleep(300) // a look for work or more (every 20 ms)
    assert.deepEqual(receiver.received.map(({ body }) => JSON.parse(body).data.name), ['Rex', 'Rex', 'Tom', 'Max'], 'Max waits for its retry')
    assert.deepEqual((await deliveries(testApp, id)).map(({ attempt, responseStatus }) => ({ attempt, responseStatus })), [
      { attempt: 1, responseStatus: 500 }, { attempt: 1, responseStatus: 204 }, { attempt: 1, responseStatus: 204 }, { attempt: 1, responseStatus: 500 }
    ])
  })

  test('the URL sent again as it is (a client that PATCHes the whole subscription) changes nothing: the event on its way is not sent twice', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const receiver = await startReceiver(t)
    const releases: Array<() => void> = []
    receiver.hold = (request) => request === 1 ? new Promise<void>((resolve) => { releases.push(resolve) }) : undefined
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await receiver.waitFor(1)
    await patch(testApp, id, { url: receiver.url, events: ['*'], description: 'stock' })
    await sleep(200) // a look for work or more (every 20 ms)
    for (const release of releases) release()
    await createPet(testApp, { name: 'Tom', categoryId: 3 })
    await receiver.waitFor(2)
    await until('both attempts are logged', async () => (await deliveries(testApp, id)).length === 2)
    assert.deepEqual(receiver.received.map(({ body }) => JSON.parse(body).data.name), ['Rex', 'Tom'], 'each once, in order')
  })

  test('a retry asked for twice while queued is made once; past the queue\'s bound, 429', async (t) => {
    const testApp = await build(t, { store, env: LOCAL, limits: { webhookPollMs: 20, maxQueuedRetries: 2 } })
    const receiver = await startReceiver(t)
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json()
    for (const name of ['Rex', 'Tom', 'Max']) await createPet(testApp, { name, categoryId: 3 })
    await receiver.waitFor(3)
    await until('the attempts are logged', async () => (await deliveries(testApp, id)).length === 3)
    const [max, tom, rex] = await deliveries(testApp, id)
    const releases: Array<() => void> = []
    receiver.hold = () => new Promise<void>((resolve) => { releases.push(resolve) })
    const retry = async (delivery: { id: number }) => await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/deliveries/${delivery.id}/retry`, headers: testApp.auth })
    assert.equal((await retry(rex!)).statusCode, 202)
    await receiver.waitFor(4)
    assert.equal((await retry(rex!)).statusCode, 202, 'asked again while it is on its way')
    assert.equal((await retry(tom!)).statusCode, 202)
    const refused = await retry(max!)
    assert.equal(refused.statusCode, 429)
    assert.deepEqual(errorOf(refused), { code: 'rate_limited', message: `2 retries of webhook ${id} are queued already; retry once they are made`, status: 429 })
    receiver.hold = undefined
    for (const release of releases) release()
    await receiver.waitFor(5)
    await sleep(300)
    const again = receiver.received.slice(3).map(({ headers }) => headers['webhook-id'])
    assert.deepEqual(again.sort(), [receiver.received[0]!.headers['webhook-id'], receiver.received[1]!.headers['webhook-id']].sort(), 'Rex once more, and Tom')
  })

  test('retries of a subscription are made one at a time: a receiver that hangs holds up no other subscription\'s', async (t) => {
    const testApp = await build(t, { store, env: LOCAL, limits: { webhookPollMs: 20 } })
    const [hanging, healthy] = [await startReceiver(t), await startReceiver(t)]
    const ids: number[] = []
    for (const receiver of [hanging, healthy]) ids.push((await subscribe(testApp, { url: receiver.url, events: ['*'] })).json().id)
    for (let i = 0; i < 6; i++) await createPet(testApp, { name: `Pet ${i}`, categoryId: 3 })
    await Promise.all([hanging.waitFor(6), healthy.waitFor(6)])
    await until('the attempts are logged', async () => (await deliveries(testApp, ids[0]!)).length === 6 && (await deliveries(testApp, ids[1]!)).length === 6)
    const releases: Array<() => void> = []
    hanging.hold = () => new Promise<void>((resolve) => { releases.push(resolve) })
    t.after(() => { for (const release of releases) release() })
    const retry = async (id: number, delivery: { id: number }) => {
      assert.equal((await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/deliveries/${delivery.id}/retry`, headers: testApp.auth })).statusCode, 202)
    }
    // More than the instance's retry slots (4): each one a subscription's, they would all be taken.
    for (const delivery of await deliveries(testApp, ids[0]!)) await retry(ids[0]!, delivery)
    await hanging.waitFor(7)
    await retry(ids[1]!, (await deliveries(testApp, ids[1]!))[0]!)
    await healthy.waitFor(7, 2000)
    await sleep(100)
    assert.equal(hanging.received.length, 7, 'the hanging receiver has one retry at a time')
  })

  test('retries asked for at once are queued up to the bound and no further, and none for a subscription deleted meanwhile', async (t) => {
    // No look for work: what is queued stays queued.
    const testApp = await build(t, { store, env: LOCAL, limits: { webhookPollMs: 3_600_000 } })
    const { id } = (await subscribe(testApp, { url: 'https://hooks.example.com/a', events: ['*'] })).json()
    for (let i = 0; i < 20; i++) await createPet(testApp, { name: `Pet ${i}`, categoryId: 3 })
    const eventIds = (await testApp.app.inject({ url: '/v1/events?limit=20', headers: testApp.auth })).json().map((event: { id: number }) => BigInt(event.id))
    assert.equal(eventIds.length, 20)
    const queued = await Promise.all(eventIds.map(async (eventId: bigint) => await queueRedelivery(testApp.db, BigInt(id), eventId, 5)))
    assert.equal(queued.filter((outcome) => outcome === 'queued').length, 5)
    assert.equal(queued.filter((outcome) => outcome === 'full').length, 15)
    const { count } = await testApp.db.selectFrom('webhook_redeliveries').select((eb) => eb.fn.countAll<string>().as('count')).where('webhook_id', '=', BigInt(id)).executeTakeFirstOrThrow()
    assert.equal(Number(count), 5)
    assert.equal(await queueRedelivery(testApp.db, BigInt(id), eventIds[queued.indexOf('queued')], 5), 'queued', 'an event queued already is queued, the queue full or not')
    assert.equal((await testApp.app.inject({ method: 'DELETE', url: `/v1/webhooks/${id}`, headers: testApp.auth })).statusCode, 204)
    assert.equal(await queueRedelivery(testApp.db, BigInt(id), eventIds[0], 5), 'gone', 'no retry is left to a subscription deleted meanwhile')
  })

  test('a deliveries page\'s cursor serves that subscription\'s log only', async (t) => {
    const testApp = await build(t, { store, env: LOCAL, limits: { webhookPollMs: 20 } })
    const receiver = await startReceiver(t)
    const first = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json().id
    const second = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json().id
    for (const name of ['Rex', 'Tom']) await createPet(testApp, { name, categoryId: 3 })
    await until('every attempt is logged', async () => (await deliveries(testApp, first)).length === 2 && (await deliveries(testApp, second)).length === 2)
    const page = await testApp.app.inject({ url: `/v1/webhooks/${first}/deliveries?limit=1`, headers: testApp.auth })
    const cursor = /[?&]cursor=([^&>]+)/.exec(String(page.headers.link))![1]!
    const own = await testApp.app.inject({ url: `/v1/webhooks/${first}/deliveries?limit=1&cursor=${cursor}`, headers: testApp.auth })
    assert.equal(own.statusCode, 200)
    assert.equal(own.json()[0].id, (await deliveries(testApp, first))[1]!.id)
    const other = await testApp.app.inject({ url: `/v1/webhooks/${second}/deliveries?limit=1&cursor=${cursor}`, headers: testApp.auth })
    assert.equal(other.statusCode, 400, other.body)
    assert.equal(errorOf(other).code, 'validation_failed')
  })

  test('a rotated secret signs beside the new one for 24 hours', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const receiver = await startReceiver(t)
    const { id, secret: oldSecret } = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json()
    const rotated = await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/rotate-secret`, headers: testApp.auth })
    assert.equal(rotated.statusCode, 200, rotated.body)
    const { secret: newSecret, previousSecretExpiresAt } = rotated.json()
    assert.notEqual(newSecret, oldSecret)
    const overlap = Date.parse(previousSecretExpiresAt) - testApp.store.clock.now()
    assert.ok(overlap > 23.9 * 3600_000 && overlap <= 24 * 3600_000, previousSecretExpiresAt)
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const [delivery] = await receiver.waitFor(1)
    assert.equal(String(delivery!.headers['webhook-signature']).split(' ').length, 2)
    verify(newSecret, delivery!)
    verify(oldSecret, delivery!)
  })

  test('rotations at the same moment each keep the secret before them: none is lost', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const { id } = (await subscribe(testApp, { url: 'https://hooks.example.com/a', events: ['*'] })).json()
    for (let round = 0; round < 8; round++) {
      const rotate = async () => (await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/rotate-secret`, headers: testApp.auth })).json().secret
      const answered = await Promise.all([rotate(), rotate()])
      const row = await testApp.db.selectFrom('webhooks').select(['secret', 'previous_secret']).where('id', '=', BigInt(id)).executeTakeFirstOrThrow()
      // One rotation came after the other: its previous secret is the first one's, which signs beside it.
      assert.ok(answered.includes(row.secret) && answered.includes(row.previous_secret!), `round ${round}: ${row.previous_secret} kept, ${answered.join(' and ')} answered`)
    }
  })

  test('a subscription\'s url, events and description, as answered, make a body a create takes (description null)', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const { id } = (await subscribe(testApp, { url: 'https://hooks.example.com/a', events: ['pet.created'] })).json()
    const { url, events, description } = await getWebhook(testApp, id)
    assert.equal(description, null)
    assert.equal((await subscribe(testApp, { url, events, description })).json().description, null)
  })

  test('subscriptions: list, fetch, change, delete, idempotent creates, validation and scopes', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const body = { url: 'https://hooks.example.com/a', events: ['order.placed', 'order.cancelled'] }
    const first = await subscribe(testApp, body, { 'idempotency-key': 'hook-1' })
    const replay = await subscribe(testApp, body, { 'idempotency-key': 'hook-1' })
    assert.equal(replay.body, first.body, 'a retried registration gets the same subscription and secret')
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    const created = first.json()
    assert.equal(first.headers.location, `/v1/webhooks/${created.id}`)
    assert.deepEqual({ ...created, secret: undefined, createdAt: undefined }, {
      id: created.id, url: body.url, events: body.events, description: null, enabled: true, disabledReason: null, lastError: null, secret: undefined, createdAt: undefined
    })
    const reused = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...testApp.auth, 'idempotency-key': 'hook-1' }, payload: { ...body, events: ['*'] } })
    assert.equal(errorOf(reused).code, 'idempotency_key_reused')
    const second = (await subscribe(testApp, { url: 'HTTPS://Hooks.Example.COM/b', events: ['*', 'pet.created'] })).json()
    assert.deepEqual(second.events, ['*'])
    assert.equal(second.url, 'https://hooks.example.com/b', 'kept as parsed')

    const page = await testApp.app.inject({ url: '/v1/webhooks?limit=1', headers: testApp.auth })
    assert.equal(page.json().length, 1)
    assert.equal(page.json()[0].secret, undefined, 'a secret is never read back')
    const next = await testApp.app.inject({ url: nextLink(page.headers.link)!, headers: testApp.auth })
    assert.deepEqual(next.json().map((hook: { id: number }) => hook.id), [second.id])

    const changed = await patch(testApp, created.id, { url: 'https://hooks.example.com/c', events: ['pet.created'], description: 'moved', enabled: false })
    assert.deepEqual({ url: changed.url, events: changed.events, description: changed.description, enabled: changed.enabled },
      { url: 'https://hooks.example.com/c', events: ['pet.created'], description: 'moved', enabled: false })
    assert.deepEqual(await getWebhook(testApp, created.id), changed)

    for (const [payload, status, code] of [
      [{}, 400, 'validation_failed'],
      [{ url: 'ftp://hooks.example.com/' }, 422, 'webhook_url_refused'],
      [{ events: [] }, 400, 'validation_failed'],
      [{ events: ['pet.deleted'] }, 400, 'validation_failed'],
      [{ enabled: 'yes' }, 400, 'validation_failed']
    ] as const) {
      const response = await testApp.app.inject({ method: 'PATCH', url: `/v1/webhooks/${created.id}`, headers: testApp.auth, payload })
      assert.equal(response.statusCode, status, JSON.stringify(payload))
      assert.equal(errorOf(response).code, code)
    }
    for (const [payload, status] of [
      [{ url: 'https://hooks.example.com/', events: ['pet.created'], secret: 'mine' }, 400],
      [{ url: 'https://hooks.example.com/', events: ['pet.created', 'pet.created'] }, 400],
      [{ url: 'https://hooks.example.com/' }, 400],
      [{ url: `https://hooks.example.com/${'x'.repeat(2100)}`, events: ['*'] }, 400],
      [{ url: 'not a url', events: ['*'] }, 422],
      [{ url: 'https://hooks.example.com/a\u0000b', events: ['*'] }, 400],
      [{ url: 'https://hooks.example.com/', events: ['*'], description: 'a\u0000b' }, 400],
      // Stored, a lone surrogate became one U+FFFD on PostgreSQL and three on SQLite.
      [{ url: 'https://hooks.example.com/', events: ['*'], description: 'a\ud800b' }, 400],
      [{ url: 'https://hooks.example.com/\udc00', events: ['*'] }, 400],
      [{ url: 'https://user:pass@hooks.example.com/', events: ['*'] }, 422]
    ] as const) {
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload })
      assert.equal(response.statusCode, status, JSON.stringify(payload))
    }

    const { key: readOnly } = await createKey(testApp.db, 'reader', { scopes: 'webhooks:read' })
    const reader = { authorization: `Bearer ${readOnly}` }
    assert.equal((await testApp.app.inject({ url: '/v1/webhooks', headers: reader })).statusCode, 200)
    const refused = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: reader, payload: body })
    assert.equal(errorOf(refused).code, 'insufficient_scope')
    assert.match(errorOf(refused).message, /webhooks:write/)
    // Documented: webhooks:write sends the events where the key says, without events:read.
    const { key: writeOnly } = await createKey(testApp.db, 'writer', { scopes: 'webhooks:write' })
    assert.equal((await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { authorization: `Bearer ${writeOnly}` }, payload: body })).statusCode, 201)
    const { key: petsOnly } = await createKey(testApp.db, 'pets', { scopes: 'pets:read pets:write' })
    assert.equal((await testApp.app.inject({ url: `/v1/webhooks/${created.id}/deliveries`, headers: { authorization: `Bearer ${petsOnly}` } })).statusCode, 403)

    const deleted = await testApp.app.inject({ method: 'DELETE', url: `/v1/webhooks/${created.id}`, headers: testApp.auth })
    assert.equal(deleted.statusCode, 204)
    assert.equal(deleted.body, '')
    for (const [method, url] of [['GET', ''], ['DELETE', ''], ['PATCH', ''], ['POST', '/rotate-secret'], ['GET', '/deliveries']] as const) {
      const response = await testApp.app.inject({ method, url: `/v1/webhooks/${created.id}${url}`, headers: testApp.auth, ...(method === 'PATCH' && { payload: { enabled: true } }) })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.equal(errorOf(response).message, `No webhook with id ${created.id}`)
    }
  })

  test('there may be so many subscriptions and no more; a refused create keeps its Idempotency-Key free', async (t) => {
    const testApp = await build(t, { store, env: LOCAL, limits: { maxWebhooks: 2 } })
    const body = { url: 'https://hooks.example.com/', events: ['*'] }
    const first = (await subscribe(testApp, body)).json()
    await subscribe(testApp, body)
    for (const headers of [{}, { 'idempotency-key': 'third' }]) {
      const refused = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...testApp.auth, ...headers }, payload: body })
      assert.equal(refused.statusCode, 409)
      assert.deepEqual(errorOf(refused), { code: 'webhook_limit_reached', message: 'There are 2 webhooks, the most there may be; delete one first', status: 409 })
    }
    await testApp.app.inject({ method: 'DELETE', url: `/v1/webhooks/${first.id}`, headers: testApp.auth })
    const third = await subscribe(testApp, body, { 'idempotency-key': 'third' })
    assert.equal(third.headers['idempotent-replayed'], undefined)
  })

  test('retrying a delivery sends its event once more with the same webhook-id, and logs the attempt', async (t) => {
    const testApp = await buildWithWebhooks(t, store)
    const receiver = await startReceiver(t)
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['*'] })).json()
    await createPet(testApp, { name: 'Rex', categoryId: 3 })
    await receiver.waitFor(1)
    await until('the attempt is logged', async () => (await deliveries(testApp, id)).length === 1)
    const [delivery] = await deliveries(testApp, id)
    const retry = await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/deliveries/${delivery!.id}/retry`, headers: testApp.auth })
    assert.equal(retry.statusCode, 202, retry.body)
    assert.deepEqual(retry.json(), { webhookId: id, eventId: delivery!.eventId })
    const [first, again] = await receiver.waitFor(2)
    assert.equal(again!.headers['webhook-id'], first!.headers['webhook-id'])
    assert.equal(again!.body, first!.body)
    await until('the retry is logged', async () => (await deliveries(testApp, id)).length === 2)
    assert.deepEqual((await deliveries(testApp, id)).map(({ attempt }) => attempt), [2, 1])

    const unknown = await testApp.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/deliveries/999/retry`, headers: testApp.auth })
    assert.equal(errorOf(unknown).message, `No delivery with id 999 of webhook ${id}`)
  })
})

test('webhook metrics: attempts by outcome, latency from the change to the 2xx, and the queue depth', async (t) => {
  const metrics = createMetrics()
  const { store, db, databaseUrl } = await createTestStore(t)
  const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl, ...LOCAL, WEBHOOK_RETRY_SCHEDULE: '100ms,1d' }), store, metrics, limits: { ...TEST_LIMITS, webhookPollMs: 20 } })
  defer(t, () => app.close())
  checkAnswers(t, app)
  const headers = { authorization: `Bearer ${(await createKey(db)).key}` }
  const receiver = await startReceiver(t)
  receiver.answers.push(500)
  await app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: { url: receiver.url, events: ['*'] } })
  // Disabled at once: its events wait in the queue.
  const paused = (await app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: { url: receiver.url, events: ['*'] } })).json()
  await app.inject({ method: 'PATCH', url: `/v1/webhooks/${paused.id}`, headers, payload: { enabled: false } })
  await app.inject({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId: 3 } })
  await receiver.waitFor(2)
  await app.inject({ method: 'PATCH', url: `/v1/webhooks/${paused.id}`, headers, payload: { enabled: true } })
  await receiver.waitFor(3)
  await app.inject({ method: 'PATCH', url: `/v1/webhooks/${paused.id}`, headers, payload: { enabled: false } })
  await app.inject({ method: 'POST', url: '/v1/categories', headers, payload: { name: 'Dogs' } })
  await receiver.waitFor(4)
  await sleep(100)

  const text = await metrics.registry.metrics()
  assert.match(text, /petstore_webhook_deliveries_total\{outcome="failed"\} 1/)
  assert.match(text, /petstore_webhook_deliveries_total\{outcome="delivered"\} 3/)
  assert.match(text, /petstore_webhook_delivery_latency_seconds_count 3/)
  assert.match(text, /petstore_webhook_delivery_latency_seconds_bucket\{le="\+Inf"\} 3/)
  assert.match(text, /petstore_webhook_queue_depth 0/, 'a disabled subscription owes nothing')
  await app.inject({ method: 'PATCH', url: `/v1/webhooks/${paused.id}`, headers, payload: { url: 'http://127.0.0.1:9/closed', enabled: true } })
  await app.inject({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Tom', categoryId: 3 } })
  await sleep(200)
  assert.match(await metrics.registry.metrics(), /petstore_webhook_queue_depth 2/, 'the category and Tom wait for the closed port')
})

forEachStore((store) => {
  test('the event log keeps the events an enabled subscription still owes past their retention, and no more', async (t) => {
    const clock = manualClock(Date.now())
    const testApp = await build(t, { store, env: { ...LOCAL, WEBHOOK_RETRY_SCHEDULE: '1d' }, clock, limits: { webhookPollMs: 20 } })
    const receiver = await startReceiver(t)
    receiver.answers.push(503)
    await createPet(testApp, { name: 'Before', categoryId: 1 })
    const { id } = (await subscribe(testApp, { url: receiver.url, events: ['pet.created'] })).json()
    const owed = await createPet(testApp, { name: 'Owed', categoryId: 1 })
    await receiver.waitFor(1)
    await until('the failure is logged', async () => (await deliveries(testApp, id)).length === 1)
    clock.advance(31 * 24 * 3600_000)
    const prune = async () => await pruneExpiredEvents(testApp.db, clock, 30, await findOldestOwedPosition(testApp.db))
    assert.equal(await prune(), 1, 'only the event before the subscription is deleted')
    const kept = (await testApp.app.inject({ url: '/v1/events', headers: testApp.auth })).json()
    assert.deepEqual(kept.map((event: { data: { id: number } }) => event.data.id), [owed.id])
    await patch(testApp, id, { enabled: false })
    assert.equal(await prune(), 1, 'a disabled subscription holds nothing')

    assert.equal(await pruneExpiredDeliveries(testApp.db, clock, 30), 1, 'the attempt of 31 days ago is deleted')
    const cutoff = new Date(clock.now() - 30 * 24 * 3600_000).toISOString()
    assert.ok((await deliveries(testApp, id)).every(({ attemptedAt }) => attemptedAt >= cutoff))
  })
})

test('every validation message on webhooks says what to fix in words, not in schema keywords', async (t) => {
  const testApp = await build(t)
  const created = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url: 'https://hooks.example.com/', events: ['*'] } })
  assert.equal(created.statusCode, 201)
  for (const [method, url, payload, headers, message] of [
    ['POST', '/v1/webhooks', { url: 'https://hooks.example.com/', events: [] }, {}, '`events` must list at least 1 item'],
    ['POST', '/v1/webhooks', { url: 'https://hooks.example.com/', events: ['pet.created', 'pet.created'] }, {}, '`events` must not list an item twice: items 0 and 1 are the same'],
    ['POST', '/v1/webhooks', { url: 'https://hooks.example.com/', events: ['*'], description: 'a\u0000b' }, {}, '`description` must be well-formed Unicode without U+0000'],
    ['PATCH', `/v1/webhooks/${created.json().id}`, { description: '\ud800' }, {}, '`description` must be well-formed Unicode without U+0000'],
    ['POST', '/v1/webhooks', { url: 'https://hooks.example.com/', events: ['*'] }, { 'idempotency-key': 'clé' }, 'Header `idempotency-key` must be printable ASCII characters (U+0020 to U+007E)'],
    ['PATCH', `/v1/webhooks/${created.json().id}`, {}, {}, 'The body must have at least 1 field']
  ] as const) {
    const response = await testApp.app.inject({ method, url, headers: { ...testApp.auth, ...headers }, payload })
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(errorOf(response).message, message)
  }
})

test('as many deliveries in flight as the dispatcher allows (16), and their bodies read after, raise no warning of a listener leak', async (t) => {
  const leakWarnings: Error[] = []
  const onWarning = (warning: Error) => { if (warning.name === 'MaxListenersExceededWarning') leakWarnings.push(warning) }
  process.on('warning', onWarning)
  t.after(() => { process.off('warning', onWarning) })
  const testApp = await build(t, { env: LOCAL, limits: { webhookPollMs: 20 } })
  // Holds the first 16 requests until all have come, then answers each at once and ends its body
  // 100 ms later: the next event of each subscription goes while the last one's body is still read.
  const held: Array<() => void> = []
  let received = 0
  const receiver = createServer((request, response) => {
    request.resume().on('end', () => {
      received++
      const answer = () => {
        response.writeHead(200, { 'content-type': 'text/plain' }).flushHeaders()
        setTimeout(() => response.end('ok'), 100)
      }
      if (received > 16) answer()
      else if (held.push(answer) === 16) for (const release of held) release()
    })
  })
  receiver.listen(0, '127.0.0.1')
  await once(receiver, 'listening')
  t.after(() => { receiver.closeAllConnections(); receiver.close() })
  const { port } = receiver.address() as AddressInfo
  for (let i = 0; i < 16; i++) await subscribe(testApp, { url: `http://127.0.0.1:${port}/${i}`, events: ['pet.created'] })
  for (const name of ['Rex', 'Tom', 'Kit']) await createPet(testApp, { name, categoryId: 1 })
  await until('every event is delivered', async () => received >= 48 && held.length === 16)
  await sleep(150) // the last bodies read; a warning is emitted on the next tick
  assert.deepEqual(leakWarnings.map(({ message }) => message), [])
})
