import { deleteInBatches, type DeletedCount } from '../background-deletion.js'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { findExpiredThrough } from '../expired-through.js'
import { pruneEvents } from './event.repository.js'

const BATCH = 1000
const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Deletes the events older than `retentionDays` (see findExpiredThrough), oldest first, a thousand per
 * transaction, but none after `keepAfter` (events webhooks still owe); resolves with how many.
 */
export async function pruneExpiredEvents (db: Db, clock: Clock, retentionDays: number, keepAfter?: bigint, onDeleted?: DeletedCount): Promise<number> {
  const now = clock.now()
  const before = new Date(now - retentionDays * DAY_MS).toISOString()
  const through = await findExpiredThrough(db, { table: 'events', timeColumn: 'occurred_at', before, now: new Date(now).toISOString(), atMost: keepAfter })
  if (through === undefined) return 0
  return await deleteInBatches(() => pruneEvents(db, through, BATCH), BATCH, onDeleted)
}
