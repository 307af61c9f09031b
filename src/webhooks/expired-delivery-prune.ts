import { deleteInBatches, type DeletedCount } from '../background-deletion.js'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { findExpiredThrough } from '../expired-through.js'

const BATCH = 1000
const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Deletes the deliveries log's attempts older than `retentionDays` (see findExpiredThrough), oldest
 * first, a thousand per transaction; resolves with how many. Ids follow the attempts' order, so
 * walking them needs no index beyond the id's.
 */
export async function pruneExpiredDeliveries (db: Db, clock: Clock, retentionDays: number, onDeleted?: DeletedCount): Promise<number> {
  const now = clock.now()
  const before = new Date(now - retentionDays * DAY_MS).toISOString()
  const through = await findExpiredThrough(db, { table: 'webhook_deliveries', timeColumn: 'attempted_at', before, now: new Date(now).toISOString() })
  if (through === undefined) return 0
  return await deleteInBatches(async () => {
    const oldest = await db.selectFrom('webhook_deliveries').select('id').where('id', '<=', through).orderBy('id').limit(BATCH).execute()
    if (oldest.length > 0) await db.deleteFrom('webhook_deliveries').where('id', '<=', oldest.at(-1)!.id).execute()
    return oldest.length
  }, BATCH, onDeleted)
}
