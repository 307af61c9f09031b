import { sql } from 'kysely'
import type { Db } from '../db/database.js'
import { isPostgres } from '../db/dialect.js'
import type { IdempotencyKeyTable } from './idempotency-key.table.js'

export type StoredResponse = Pick<IdempotencyKeyTable, 'request_hash' | 'status_code' | 'response_body' | 'location'>

// How long a claim waits for another transaction holding the same key before answering 409.
const CLAIM_LOCK_TIMEOUT = '100ms'

export async function findStoredResponse (db: Db, apiKeyId: bigint, key: string, notBefore: string): Promise<StoredResponse | undefined> {
  return await db.selectFrom('idempotency_keys')
    .select(['request_hash', 'status_code', 'response_body', 'location'])
    .where('api_key_id', '=', apiKeyId)
    .where('key', '=', key)
    .where('created_at', '>=', notBefore)
    .executeTakeFirst()
}

export async function deleteExpiredKeys (db: Db, before: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_at', '<', before).execute()
}

/**
 * Inserts a placeholder row for the key inside the caller's transaction; false when a committed row
 * holds it already. On PostgreSQL a transaction of another instance holding the key makes this fail
 * with lock_not_available (55P03) after a short wait, rather than queueing behind it.
 */
export async function claimKey (trx: Db, row: Pick<IdempotencyKeyTable, 'api_key_id' | 'key' | 'request_hash' | 'created_at'>): Promise<boolean> {
  const postgres = isPostgres(trx)
  if (postgres) await sql`select set_config('lock_timeout', ${CLAIM_LOCK_TIMEOUT}, true)`.execute(trx)
  const result = await trx.insertInto('idempotency_keys')
    .values({ ...row, status_code: 0, response_body: '', location: null })
    .onConflict((conflict) => conflict.columns(['api_key_id', 'key']).doNothing())
    .executeTakeFirst()
  if (postgres) await sql`select set_config('lock_timeout', '0', true)`.execute(trx)
  return result.numInsertedOrUpdatedRows === 1n
}

export async function saveResponse (trx: Db, apiKeyId: bigint, key: string, response: Pick<IdempotencyKeyTable, 'status_code' | 'response_body' | 'location'>): Promise<void> {
  await trx.updateTable('idempotency_keys').set(response).where('api_key_id', '=', apiKeyId).where('key', '=', key).execute()
}
