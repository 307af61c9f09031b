import { deleteInBatches, type DeletedCount } from '../background-deletion.js'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { pruneEvents } from './event.repository.js'

const BATCH = 1000
const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Deletes the events older than `retentionDays`, oldest first, a thousand per transaction, but none
 * after `keepAfter` (events webhooks still owe); resolves with how many.
 */
export async function pruneExpiredEvents (db: Db, clock: Clock, retentionDays: number, keepAfter?: bigint, onDeleted?: DeletedCount): Promise<number> {
  const before = new Date(clock.now() - retentionDays * DAY_MS).toISOString()
  return await deleteInBatches(() => pruneEvents(db, before, BATCH, keepAfter), BATCH, onDeleted)
}
