import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildApp, type Limits } from '../../src/app.js'
import type { Clock } from '../../src/clock.js'
import type { WebhookNetwork } from '../../src/webhooks/webhook-transport.js'
import { build, checkAnswers, defer, forEachStore, manualClock, openTestStore, TEST_LIMITS, TEST_STORES, type TestApp } from '../helper.js'
import { startReceiver } from './receiver.js'

const ENV = { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_PER_MINUTE: '0', WEBHOOK_RETRY_SCHEDULE: '100ms' }
const LEASE_MS = 15_000

async function until (check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 250 && !await check(); i++) await sleep(20)
}

/** A network that counts the connections it opens, all to 127.0.0.1. */
function countingNetwork (): WebhookNetwork & { connections: number } {
  const network = {
    connections: 0,
    resolve: async () => ['127.0.0.1'],
    dial: (address: string, port: number) => {
      network.connections++
      return connect({ host: address, port })
    }
  }
  return network
}

/** A second instance on the test app's store. */
async function secondInstance (t: TestContext, first: TestApp, { clock, webhookNetwork, limits }: { clock?: Clock, webhookNetwork?: WebhookNetwork, limits?: Partial<Limits> }): Promise<TestApp> {
  const store = openTestStore(t, first.config.DATABASE_URL, { poolSize: 4, ...(clock !== undefined && { clock }) })
  const app = await buildApp({ config: first.config, store, webhookNetwork, limits: { ...TEST_LIMITS, webhookPollMs: 20, ...limits } })
  defer(t, () => app.close())
  checkAnswers(t, app)
  return { ...first, app, store, db: store.db }
}

forEachStore((store) => {
  test('a frozen instance\'s subscription is taken over when its lease runs out, and its late answer records nothing', async (t) => {
    const clock = manualClock(Date.now())
    const first = await build(t, { store, env: ENV, clock, limits: { webhookPollMs: 20 } })
    const receiver = await startReceiver(t)
    let release: (() => void) | undefined
    receiver.hold = (request) => request === 1 ? new Promise<void>((resolve) => { release = resolve }) : undefined
    const { id } = (await first.app.inject({ method: 'POST', url: '/v1/webhooks', headers: first.auth, payload: { url: receiver.url, events: ['*'] } })).json()
    await first.app.inject({ method: 'POST', url: '/v1/pets', headers: first.auth, payload: { name: 'Rex', categoryId: 3 } })
    const second = await secondInstance(t, first, { clock })
    await receiver.waitFor(1)
    // Whichever instance took it holds the lease while its receiver hangs; the other waits for the lease to run out.
    await sleep(200)
    assert.equal(receiver.received.length, 1, 'no other instance sends while the lease holds')
    clock.advance(LEASE_MS + 1)
    const [held, takenOver] = await receiver.waitFor(2)
    assert.equal(takenOver!.headers['webhook-id'], held!.headers['webhook-id'])
    release!()
    await sleep(300)
    const log = (await second.app.inject({ url: `/v1/webhooks/${id}/deliveries`, headers: first.auth })).json()
    assert.deepEqual(log.map(({ attempt, responseStatus }: { attempt: number, responseStatus: number }) => ({ attempt, responseStatus })), [{ attempt: 1, responseStatus: 204 }],
      'only the attempt of the instance holding the lease is logged')
  })
  test('an attempt that outlives its lease records nothing, even when its own instance has taken the subscription again', async (t) => {
    const clock = manualClock(Date.now())
    const testApp = await build(t, { store, env: ENV, clock, limits: { webhookPollMs: 20 } })
    const receiver = await startReceiver(t)
    const releases: Array<() => void> = []
    // The first attempt at Rex, and the attempt at Tom that follows the second attempt at Rex, are held.
    receiver.hold = (request) => request === 1 || request === 3 ? new Promise<void>((resolve) => { releases.push(resolve) }) : undefined
    const { id } = (await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url: receiver.url, events: ['*'] } })).json()
    for (const name of ['Rex', 'Tom']) await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 3 } })
    await receiver.waitFor(1)
    clock.advance(LEASE_MS + 1)
    // Taken again: Rex delivered under the new lease, which is held while Tom is on his way.
    await receiver.waitFor(3)
    releases[0]!()
    await sleep(300)
    releases[1]!()
    await until(async () => (await testApp.app.inject({ url: `/v1/webhooks/${id}/deliveries`, headers: testApp.auth })).json().length === 2)
    const log = (await testApp.app.inject({ url: `/v1/webhooks/${id}/deliveries`, headers: testApp.auth })).json()
    assert.deepEqual(log.map(({ attempt, responseStatus }: { attempt: number, responseStatus: number }) => ({ attempt, responseStatus })), [
      { attempt: 1, responseStatus: 204 },
      { attempt: 1, responseStatus: 204 }
    ], 'Tom, then Rex once: the late answer to the first attempt at Rex is not logged')
  })
})

if (TEST_STORES.some((store) => store.name === 'postgres')) {
  test('two instances on one PostgreSQL database deliver 1,000 events to each of two subscriptions exactly once', async (t) => {
    const networks = [countingNetwork(), countingNetwork()]
    const postgres = TEST_STORES.find((store) => store.name === 'postgres')!
    // One subscription at a time per instance: while one instance works a subscription, the other takes the other.
    const limits = { webhookPollMs: 20, webhookConcurrency: 1 }
    const first = await build(t, { store: postgres, env: ENV, limits, webhookNetwork: networks[0] })
    const second = await secondInstance(t, first, { webhookNetwork: networks[1], limits })
    const instances = [first, second]
    const receiver = await startReceiver(t)
    for (const path of ['a', 'b']) {
      const response = await first.app.inject({ method: 'POST', url: '/v1/webhooks', headers: first.auth, payload: { url: `${receiver.url}/${path}`, events: ['pet.created'] } })
      assert.equal(response.statusCode, 201)
    }
    const PETS = 1000
    let next = 0
    await Promise.all(Array.from({ length: 10 }, async () => {
      for (let i = next++; i < PETS; i = next++) {
        const response = await instances[i % 2]!.app.inject({ method: 'POST', url: '/v1/pets', headers: first.auth, payload: { name: `Pet ${i}`, categoryId: 1 } })
        assert.equal(response.statusCode, 201)
      }
    }))
    await receiver.waitFor(2 * PETS, 60_000)
    await sleep(500)
    const ids = receiver.received.map(({ headers }) => String(headers['webhook-id']))
    assert.equal(ids.length, 2 * PETS, 'no delivery was sent twice')
    assert.equal(new Set(ids).size, 2 * PETS)
    t.diagnostic(`connections opened by each instance: ${networks.map((network) => network.connections).join(', ')}`)
    assert.ok(networks.every((network) => network.connections > 0), `both instances delivered (connections: ${networks.map((n) => n.connections).join(', ')})`)
  })
}

test('closing an instance abandons its delivery in flight at once and releases the subscription, which another instance then delivers', async (t) => {
  const first = await build(t, { env: ENV, limits: { webhookPollMs: 20 } })
  const receiver = await startReceiver(t)
  receiver.hold = (request) => request === 1 ? new Promise<void>(() => {}) : undefined // never answers the first request
  await first.app.inject({ method: 'POST', url: '/v1/webhooks', headers: first.auth, payload: { url: receiver.url, events: ['*'] } })
  await first.app.inject({ method: 'POST', url: '/v1/pets', headers: first.auth, payload: { name: 'Rex', categoryId: 3 } })
  await receiver.waitFor(1)
  const closing = Date.now()
  await first.app.close()
  assert.ok(Date.now() - closing < 1000, `closed in ${Date.now() - closing} ms`)
  await secondInstance(t, first, {})
  const [abandoned, again] = await receiver.waitFor(2, 5000)
  assert.equal(again!.headers['webhook-id'], abandoned!.headers['webhook-id'], 'sent again at once, not after the lease ran out')
})

test('a receiver that hangs holds up neither the API nor other subscriptions', async (t) => {
  const testApp = await build(t, { env: ENV, limits: { webhookPollMs: 20 } })
  const hung = await startReceiver(t)
  hung.hold = () => new Promise<void>(() => {}) // answers nothing
  const healthy = await startReceiver(t)
  for (const receiver of [hung, healthy]) {
    await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url: receiver.url, events: ['*'] } })
  }
  await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: 'Rex', categoryId: 3 } })
  await hung.waitFor(1)
  const started = Date.now()
  for (let i = 0; i < 20; i++) {
    const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: `Pet ${i}`, categoryId: 3 } })
    assert.equal(response.statusCode, 201)
  }
  await healthy.waitFor(21, 5000)
  assert.ok(Date.now() - started < 5000, 'the healthy receiver got every event while the other hung')
  assert.equal(hung.received.length, 1, 'the hung subscription waits for its one attempt')
})

test('a slow receiver with a backlog takes turns with the other subscriptions instead of keeping the one slot', async (t) => {
  const testApp = await build(t, { env: ENV, limits: { webhookPollMs: 20, webhookConcurrency: 1 } })
  const slow = await startReceiver(t)
  slow.hold = () => new Promise<void>((resolve) => setTimeout(resolve, 300))
  const healthy = await startReceiver(t)
  for (const receiver of [slow, healthy]) {
    await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url: receiver.url, events: ['*'] } })
  }
  const started = Date.now()
  for (let i = 0; i < 30; i++) await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: `Pet ${i}`, categoryId: 3 } })
  // The slow receiver alone takes 9 s over its 30 events; turns end after 2 s.
  await healthy.waitFor(30, 8000)
  assert.ok(Date.now() - started < 5000, `the healthy receiver had every event after ${Date.now() - started} ms`)
  assert.ok(slow.received.length < 30, 'while the slow one was still behind')
})
