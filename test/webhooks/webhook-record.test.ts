import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { sql } from 'kysely'
import { withoutFsync } from '../../src/db/commit-without-fsync.js'
import { findLastEventId } from '../../src/events/event.repository.js'
import { recordAttempt, type Recorded } from '../../src/webhooks/webhook-queue.js'
import { build, createPet, TEST_STORES, type TestApp, type TestStore } from '../helper.js'

/**
 * An app whose dispatcher never looks for work (the test plays its part: a delivery of its own would
 * log an attempt beside the test's), with a subscription leased under `held` and an event it owes.
 */
async function heldSubscription (t: TestContext, store: TestStore | undefined, env: Record<string, string> = {}) {
  const testApp = await build(t, { store, env: { ...env, WEBHOOK_ALLOW_PRIVATE: 'true' }, limits: { webhookPollMs: 3_600_000 } })
  const subscribed = await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url: 'http://127.0.0.1:9/hook', events: ['pet.created'] } })
  assert.equal(subscribed.statusCode, 201, subscribed.body)
  const webhookId = BigInt(subscribed.json().id)
  await createPet(testApp, { name: 'Recorded', categoryId: 1 })
  const eventId = await findLastEventId(testApp.db)
  await sql`update webhooks set lease_token = 'held' where id = ${webhookId}`.execute(testApp.db)
  /** Records a delivered attempt at the event, as the dispatcher does. */
  const record = async (db: TestApp['db']): Promise<Recorded> => await recordAttempt(db, webhookId, 'held',
    { eventId, attempt: 1, attemptedAt: new Date().toISOString(), responseStatus: 204, error: null, durationMs: 3 },
    { kind: 'delivered', leaseUntil: new Date(Date.now() + 15_000).toISOString() })
  /** The subscription's position and its log, as [event, status] pairs. */
  const recorded = async () => {
    const { rows: [position] } = await sql<{ delivered_through: string }>`select cast(delivered_through as text) as delivered_through from webhooks where id = ${webhookId}`.execute(testApp.db)
    const logged = await testApp.app.inject({ url: `/v1/webhooks/${webhookId}/deliveries`, headers: testApp.auth })
    const attempts = logged.json().map(({ eventId: event, responseStatus }: { eventId: number, responseStatus: number }) => [event, responseStatus])
    return { deliveredThrough: position!.delivered_through, attempts }
  }
  return { testApp, record, recorded, expected: { deliveredThrough: String(eventId), attempts: [[Number(eventId), 204]] } }
}

async function synchronous (db: TestApp['db']): Promise<number> {
  return Number((await sql<{ synchronous: number | bigint }>`pragma synchronous`.execute(db)).rows[0]!.synchronous)
}

test('under DURABILITY=strict on SQLite, withoutFsync turns the fsync off for its work alone, even when the work fails, and an attempt\'s record leaves the connection syncing', async (t) => {
  const { testApp, record, recorded, expected } = await heldSubscription(t, undefined, { DURABILITY: 'strict' })
  const [NORMAL, FULL] = [1, 2]
  assert.equal(await synchronous(testApp.db), FULL)
  assert.equal(await withoutFsync(testApp.db, async (connection) => await synchronous(connection)), NORMAL)
  assert.equal(await synchronous(testApp.db), FULL)
  await assert.rejects(withoutFsync(testApp.db, async () => { throw new Error('a failed record') }), /a failed record/)
  assert.equal(await synchronous(testApp.db), FULL)

  assert.deepEqual(await record(testApp.db), { held: true, goOn: true })
  assert.equal(await synchronous(testApp.db), FULL)
  assert.deepEqual(await recorded(), expected)
})

for (const store of TEST_STORES.filter((candidate) => candidate.name === 'postgres')) {
  test('on PostgreSQL an attempt\'s record commits without waiting for the WAL flush, in its own transaction alone, and still moves the subscription on', async (t) => {
    const { testApp, record, recorded, expected } = await heldSubscription(t, store)
    const showSynchronousCommit = async (db: TestApp['db']) => (await sql<{ synchronous_commit: string }>`show synchronous_commit`.execute(db)).rows[0]!.synchronous_commit
    // In a transaction of the test's, to see the setting the record's statement leaves in it.
    const setting = await testApp.db.transaction().execute(async (trx) => {
      assert.deepEqual(await record(trx), { held: true, goOn: true })
      return await showSynchronousCommit(trx)
    })
    assert.equal(setting, 'off', 'the record turns the wait off for its transaction')
    assert.equal(await showSynchronousCommit(testApp.db), 'on', 'and for no other')
    assert.deepEqual(await recorded(), expected)
  })
}
