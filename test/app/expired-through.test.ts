import assert from 'node:assert/strict'
import { pruneExpiredEvents } from '../../src/events/expired-event-prune.js'
import { pruneExpiredDeliveries } from '../../src/webhooks/expired-delivery-prune.js'
import { createTestStore, forEachStore, manualClock } from '../helper.js'
import { test } from 'node:test'

const DAY_MS = 24 * 60 * 60 * 1000
const NOW = Date.parse('2026-12-07T12:00:00Z')
const daysAgo = (days: number) => new Date(NOW - days * DAY_MS).toISOString()

// Dates as a machine's clock gave them, in the order the rows were written (ids): 40 days ago; then
// four years ahead, a clock stepped forward for a moment; then, the clock set right, 39 days ago
// and 10 days ago; then 1965, a clock stepped back for a moment.
const WRITTEN = [daysAgo(40), daysAgo(40 - 4 * 365), daysAgo(39), daysAgo(10), '1965-01-01T00:00:00.000Z']

forEachStore((store) => {
  test('retention deletes what a clock stepped forward dated in the future once a row after it expires, and nothing after a row still kept', async (t) => {
    const { db } = await createTestStore(t, store)
    const clock = manualClock(NOW)
    for (const at of WRITTEN) {
      await db.insertInto('events').values({ type: 'pet.created', occurred_at: at, data: '{}' }).execute()
      await db.insertInto('webhook_deliveries').values({ webhook_id: 1n, event_id: 1n, attempt: 1, attempted_at: at, response_status: 200, error: null, duration_ms: 1 }).execute()
    }
    // Events a webhook still owes (after the first) are kept whatever their dates; the row of four
    // years ahead then has no expired row after it in reach.
    assert.equal(await pruneExpiredEvents(db, clock, 30, 2n), 1)
    const datesOf = async (table: 'events' | 'webhook_deliveries') => {
      const rows = await db.selectFrom(table).selectAll().orderBy('id').execute() as Array<{ occurred_at?: string, attempted_at?: string }>
      return rows.map((row) => row.occurred_at ?? row.attempted_at)
    }
    // The row of four years ahead stopped the deletion by date at it, until 2030.
    assert.equal(await pruneExpiredEvents(db, clock, 30), 2)
    assert.equal(await pruneExpiredDeliveries(db, clock, 30), 3)
    // The row of 1965 waits for the one of 10 days ago, written before it.
    assert.deepEqual(await datesOf('events'), WRITTEN.slice(3))
    assert.deepEqual(await datesOf('webhook_deliveries'), WRITTEN.slice(3))
    const pruned = await db.selectFrom('settings').select('value').where('name', '=', 'events_pruned_through').executeTakeFirstOrThrow()
    assert.equal(pruned.value, '3')

    clock.advance(21 * DAY_MS)
    assert.equal(await pruneExpiredEvents(db, clock, 30), 2)
    assert.equal(await pruneExpiredDeliveries(db, clock, 30), 2)
  })
})
