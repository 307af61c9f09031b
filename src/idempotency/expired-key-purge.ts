import { deleteInBatches, type DeletedCount } from '../background-deletion.js'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { deleteExpiredKeys } from './idempotency-key.repository.js'
import { IDEMPOTENCY_RETENTION_MS } from './idempotent-create.js'

const BATCH = 1000

/**
 * Deletes expired idempotency records, a thousand per transaction, until none is left; resolves with
 * how many it deleted. (A create looks only at records younger than the retention time, so one not
 * purged yet changes nothing.)
 */
export async function purgeExpiredKeys (db: Db, clock: Clock, onDeleted?: DeletedCount): Promise<number> {
  const before = new Date(clock.now() - IDEMPOTENCY_RETENTION_MS).toISOString()
  return await deleteInBatches(() => deleteExpiredKeys(db, before, BATCH), BATCH, onDeleted)
}
