import { isoNow, systemClock, type Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import type { ApiKeyRow } from './api-key.table.js'

export type ApiKeySummary = Omit<ApiKeyRow, 'key_hash'>

export async function insertApiKey (db: Db, key: { name: string, hash: string, hint: string }, clock: Clock = systemClock): Promise<bigint> {
  const row = await db.insertInto('api_keys')
    .values({ name: key.name, key_hash: key.hash, key_hint: key.hint, created_at: isoNow(clock) })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

/** Every key ever made, revoked ones included, oldest first; never the hashes. */
export async function findApiKeys (db: Db): Promise<ApiKeySummary[]> {
  return await db.selectFrom('api_keys')
    .select(['id', 'name', 'key_hint', 'created_at', 'last_used_at', 'revoked_at'])
    .orderBy('id')
    .execute()
}

export async function findApiKeyByHash (db: Db, hash: string): Promise<Pick<ApiKeyRow, 'id' | 'revoked_at'> | undefined> {
  return await db.selectFrom('api_keys')
    .select(['id', 'revoked_at'])
    .where('key_hash', '=', hash)
    .executeTakeFirst()
}

/** True when a key with this id exists (revoking it twice is not an error). */
export async function revokeApiKey (db: Db, id: bigint, clock: Clock = systemClock): Promise<boolean> {
  const result = await db.updateTable('api_keys')
    .set({ revoked_at: isoNow(clock) })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  if (result.numUpdatedRows > 0n) return true
  return (await db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

export async function countApiKeys (db: Db): Promise<number> {
  const { count } = await db.selectFrom('api_keys').select((eb) => eb.fn.countAll<bigint>().as('count')).executeTakeFirstOrThrow()
  return Number(count)
}

export async function updateApiKeyLastUsed (db: Db, id: bigint, lastUsedAt: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: lastUsedAt }).where('id', '=', id).execute()
}
