import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { withoutFsync } from '../../src/db/commit-without-fsync.js'
import { findLastEventId } from '../../src/events/event.repository.js'
import { recordAttempt } from '../../src/webhooks/webhook-queue.js'
import { build, createPet, TEST_STORES, type TestApp } from '../helper.js'

// The dispatcher never looks for work: the test plays its part, and a delivery of its own would log an attempt beside the test's.
const NO_DISPATCH = { webhookPollMs: 3_600_000 }

async function synchronous (db: TestApp['db']): Promise<number> {
  return Number((await sql<{ synchronous: number | bigint }>`pragma synchronous`.execute(db)).rows[0]!.synchronous)
}

test('under DURABILITY=strict on SQLite an attempt\'s record commits without an fsync, and the writing connection syncs again after it, even when it fails', async (t) => {
  const testApp = await build(t, { env: { DURABILITY: 'strict', WEBHOOK_ALLOW_PRIVATE: 'true' }, limits: NO_DISPATCH })
  const FULL = 2
  const NORMAL = 1
  assert.equal(await synchronous(testApp.db), FULL)
  assert.equal(await withoutFsync(testApp.db, async (connection) => await synchronous(connection)), NORMAL)
  assert.equal(await synchronous(testApp.db), FULL)
  await assert.rejects(withoutFsync(testApp.db, async () => { throw new Error('a failed record') }), /a failed record/)
  assert.equal(await synchronous(testApp.db), FULL)

  const subscribed = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url: 'http://127.0.0.1:9/hook', events: ['pet.created'] } })
  const webhookId = BigInt(subscribed.json().id)
  await createPet(testApp, { name: 'Recorded', categoryId: 1 })
  const eventId = await findLastEventId(testApp.db)
  await sql`update webhooks set lease_token = 'held' where id = ${webhookId}`.execute(testApp.db)
  const record = { eventId, attempt: 1, attemptedAt: new Date().toISOString(), responseStatus: 204, error: null, durationMs: 3 }
  assert.deepEqual(await recordAttempt(testApp.db, webhookId, 'held', record, { kind: 'delivered', leaseUntil: new Date(Date.now() + 15_000).toISOString() }), { held: true, goOn: true })
  assert.equal(await synchronous(testApp.db), FULL)
  const logged = await testApp.app.inject({ url: `/v1/webhooks/${webhookId}/deliveries`, headers: testApp.auth })
  assert.deepEqual(logged.json().map(({ eventId: logId, responseStatus }: { eventId: number, responseStatus: number }) => [logId, responseStatus]), [[Number(eventId), 204]])
})

for (const store of TEST_STORES.filter((candidate) => candidate.name === 'postgres')) {
  test('on PostgreSQL an attempt\'s record commits without waiting for the WAL flush, in its own transaction alone, and still moves the subscription on', async (t) => {
    const testApp = await build(t, { store, env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, limits: NO_DISPATCH })
    const subscribed = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url: 'http://127.0.0.1:9/hook', events: ['pet.created'] } })
    assert.equal(subscribed.statusCode, 201, subscribed.body)
    const webhookId = BigInt(subscribed.json().id)
    await createPet(testApp, { name: 'Recorded', categoryId: 1 })
    const eventId = await findLastEventId(testApp.db)
    await sql`update webhooks set lease_token = 'held' where id = ${webhookId}`.execute(testApp.db)
    const record = { eventId, attempt: 1, attemptedAt: new Date().toISOString(), responseStatus: 204, error: null, durationMs: 3 }

    const setting = await testApp.db.transaction().execute(async (trx) => {
      assert.deepEqual(await recordAttempt(trx, webhookId, 'held', record, { kind: 'delivered', leaseUntil: new Date(Date.now() + 15_000).toISOString() }), { held: true, goOn: true })
      return (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(trx)).rows[0]!.synchronous_commit
    })
    assert.equal(setting, 'off', 'the record turns the wait off for its transaction')
    const after = (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(testApp.db)).rows[0]!.synchronous_commit
    assert.equal(after, 'on', 'and for no other')

    const { rows: [moved] } = await sql<{ delivered_through: string }>`select delivered_through::text from webhooks where id = ${webhookId}`.execute(testApp.db)
    assert.equal(moved!.delivered_through, String(eventId))
    const logged = await testApp.app.inject({ url: `/v1/webhooks/${webhookId}/deliveries`, headers: testApp.auth })
    assert.deepEqual(logged.json().map(({ eventId: logId, responseStatus }: { eventId: number, responseStatus: number }) => [logId, responseStatus]), [[Number(eventId), 204]])
  })
}
