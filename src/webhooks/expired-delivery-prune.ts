import { deleteInBatches, type DeletedCount } from '../background-deletion.js'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'

const BATCH = 1000
const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Deletes the deliveries log's attempts older than `retentionDays`, oldest first, a thousand per
 * transaction, stopping at the first younger one; resolves with how many. Ids follow the attempts'
 * order, so walking them needs no index beyond the id's.
 */
export async function pruneExpiredDeliveries (db: Db, clock: Clock, retentionDays: number, onDeleted?: DeletedCount): Promise<number> {
  const before = new Date(clock.now() - retentionDays * DAY_MS).toISOString()
  return await deleteInBatches(async () => {
    const oldest = await db.selectFrom('webhook_deliveries').select(['id', 'attempted_at']).orderBy('id').limit(BATCH).execute()
    const younger = oldest.findIndex((attempt) => attempt.attempted_at >= before)
    const count = younger === -1 ? oldest.length : younger
    if (count > 0) await db.deleteFrom('webhook_deliveries').where('id', '<=', oldest[count - 1]!.id).execute()
    return count
  }, BATCH, onDeleted)
}
