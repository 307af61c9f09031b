import { sql } from 'kysely'
import type { Db } from '../db/database.js'

/**
 * Deletes at most `batch` records made before `before` (ISO 8601) and returns how many it deleted:
 * expired records go in small batches in the background, never in one long transaction.
 */
export async function deleteExpiredKeys (db: Db, before: string, batch: number): Promise<number> {
  const result = await sql`delete from idempotency_keys where (api_key_id, key) in (
    select api_key_id, key from idempotency_keys where created_at < ${before} limit ${batch})`.execute(db)
  return Number(result.numAffectedRows ?? 0n)
}
