import { stringify as stringifyExact } from 'lossless-json'
import type { Db } from '../db/database.js'
import { IDEMPOTENCY_CLAIM_LOCK, lockIdOrder } from '../db/id-order-lock.js'
import type { IdempotencyClaim, StoredResponse } from './pet-store.js'

/** The answer kept with a claim for what it created (a pet, a category, a webhook, an order): the body is stored as text and replayed byte for byte. */
export function createdResponse (claim: IdempotencyClaim, created: { id: bigint }): StoredResponse {
  return { requestHash: claim.requestHash, status: 201, body: stringifyExact(created)!, location: `${claim.locationPrefix}${created.id}` }
}

/** Columns of `idempotency_keys` under the names of StoredResponse, as Kysely selects them. */
const STORED_RESPONSE_COLUMNS = ['request_hash as requestHash', 'status_code as status', 'response_body as body', 'location'] as const

/** The same, as SQL (a name quoted, as PostgreSQL folds it to lower case otherwise). */
export const STORED_RESPONSE_SELECT_LIST = STORED_RESPONSE_COLUMNS.map((column) => column.replace(/ as (\w+)$/, ' as "$1"')).join(', ')

/** Keeps the answer under its claim, in the caller's transaction (through Kysely: SQLite's hot path has its own statement). */
export async function saveResponse (trx: Db, claim: IdempotencyClaim, response: StoredResponse, createdAt: string): Promise<void> {
  await saveResponses(trx, [{ claim, response }], createdAt)
}

/** Keeps answers under their claims, in one statement in the caller's transaction. */
export async function saveResponses (trx: Db, answers: ReadonlyArray<{ claim: IdempotencyClaim, response: StoredResponse }>, createdAt: string): Promise<void> {
  if (answers.length === 0) return
  await trx.insertInto('idempotency_keys').values(answers.map(({ claim, response }) => ({
    api_key_id: claim.apiKeyId,
    key: claim.key,
    request_hash: response.requestHash,
    status_code: response.status,
    response_body: response.body,
    location: response.location,
    created_at: createdAt
  }))).execute()
}

/** The answer kept under (API key, Idempotency-Key) since `notBefore`, read without the claim lock. */
export async function findStoredResponse (db: Db, apiKeyId: bigint, key: string, notBefore: string): Promise<StoredResponse | undefined> {
  const stored = await db.selectFrom('idempotency_keys')
    .select(STORED_RESPONSE_COLUMNS)
    .where('api_key_id', '=', apiKeyId).where('key', '=', key).where('created_at', '>=', notBefore)
    .executeTakeFirst()
  // SQLite hands integers back as BigInt.
  return stored === undefined ? undefined : { ...stored, status: Number(stored.status) }
}

/**
 * Takes the claim lock (first, as every create does) and finds the answer kept under the claim's key, in
 * the caller's transaction, after deleting one older than the retention (Kysely's path; the pet stores
 * have their own statements).
 */
export async function findClaimedResponse (trx: Db, claim: IdempotencyClaim): Promise<StoredResponse | undefined> {
  await lockIdOrder(trx, IDEMPOTENCY_CLAIM_LOCK)
  await trx.deleteFrom('idempotency_keys')
    .where('api_key_id', '=', claim.apiKeyId).where('key', '=', claim.key).where('created_at', '<', claim.notBefore)
    .execute()
  return await findStoredResponse(trx, claim.apiKeyId, claim.key, claim.notBefore)
}
