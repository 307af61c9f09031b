import { deleteInBatches } from '../background-deletion.js'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'

const BATCH = 1000
const DAY_MS = 24 * 60 * 60 * 1000

/** Deletes the deliveries log's attempts older than `retentionDays`, a thousand per transaction; resolves with how many. */
export async function pruneExpiredDeliveries (db: Db, clock: Clock, retentionDays: number): Promise<number> {
  const before = new Date(clock.now() - retentionDays * DAY_MS).toISOString()
  return await deleteInBatches(async () => {
    const oldest = db.selectFrom('webhook_deliveries').select('id').where('attempted_at', '<', before).orderBy('id').limit(BATCH)
    const { numDeletedRows } = await db.deleteFrom('webhook_deliveries').where('id', 'in', oldest).executeTakeFirst()
    return Number(numDeletedRows)
  }, BATCH)
}
