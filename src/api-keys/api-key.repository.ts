import { sql } from 'kysely'
import { isoNow, type Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import type { ApiKeyRow } from './api-key.table.js'

export type ApiKeySummary = Omit<ApiKeyRow, 'key_hash'>

/** A key to store: its hash and hint (never its text), what it may do and until when. */
export interface NewApiKey {
  name: string
  hash: string
  hint: string
  /** Space-separated, as `scopeList` writes them; every scope when not given. */
  scopes?: string
  expiresAt?: Date
  rotatedFrom?: bigint
}

export async function insertApiKey (db: Db, key: NewApiKey, clock: Clock): Promise<bigint> {
  const row = await db.insertInto('api_keys')
    .values({
      name: key.name,
      key_hash: key.hash,
      key_hint: key.hint,
      created_at: isoNow(clock),
      ...(key.scopes !== undefined && { scopes: key.scopes }),
      expires_at: key.expiresAt?.toISOString() ?? null,
      rotated_from: key.rotatedFrom ?? null
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

/** Every key ever made, revoked ones included, oldest first; never the hashes. */
export async function findApiKeys (db: Db): Promise<ApiKeySummary[]> {
  return await db.selectFrom('api_keys')
    .select(['id', 'name', 'key_hint', 'scopes', 'created_at', 'expires_at', 'last_used_at', 'rotated_from', 'revoked_at'])
    .orderBy('id')
    .execute()
}

export async function findApiKeyByHash (db: Db, hash: string): Promise<Pick<ApiKeyRow, 'id' | 'revoked_at' | 'scopes' | 'expires_at'> | undefined> {
  return await db.selectFrom('api_keys')
    .select(['id', 'revoked_at', 'scopes', 'expires_at'])
    .where('key_hash', '=', hash)
    .executeTakeFirst()
}

/** What revoking a key did: revoking it twice is not an error. */
export type Revocation = 'revoked' | 'revoked already' | 'no such key'

export async function revokeApiKey (db: Db, id: bigint, clock: Clock): Promise<Revocation> {
  const result = await db.updateTable('api_keys')
    .set({ revoked_at: isoNow(clock) })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  if (result.numUpdatedRows > 0n) return 'revoked'
  return (await db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst()) === undefined ? 'no such key' : 'revoked already'
}

/** A replacement key: its hash and hint, and when it expires, given the lifetime of the key it replaces (none for one that never expired). */
export interface ReplacementKey extends Pick<NewApiKey, 'hash' | 'hint'> {
  expiry: (replacedLifetimeMs: number | undefined) => Date | undefined
}

/**
 * Replaces key `id` with `replacement`, which takes its name and scopes and names it as rotated from;
 * the old key expires `overlapMs` from now (or keeps an earlier expiry). One statement claims the old
 * key, so a revocation or expiry that lands meanwhile cannot be rotated past. A key rotated already is
 * refused after that statement, whose row lock waits for a rotation under way to commit, so that its
 * replacement is seen; a key that passes was never rotated, so the expiry read before the statement
 * is the one it was made with. Resolves the new key's id and expiry, and when the old one stops working.
 */
export async function rotateApiKey (db: Db, id: bigint, replacement: ReplacementKey, overlapMs: number, clock: Clock): Promise<{ id: bigint, expiresAt: Date | undefined, oldKeyExpiresAt: string }> {
  return await db.transaction().execute(async (trx) => {
    const now = isoNow(clock)
    const endOfOverlap = new Date(clock.now() + overlapMs).toISOString()
    const replaced = await trx.selectFrom('api_keys').select(['created_at', 'expires_at']).where('id', '=', id).executeTakeFirst()
    // ISO 8601 texts in UTC, all written by toISOString, sort as the instants they name.
    const old = await trx.updateTable('api_keys')
      .set({ expires_at: sql<string>`case when expires_at is null or expires_at > ${endOfOverlap} then ${endOfOverlap} else expires_at end` })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .returning(['name', 'scopes', 'expires_at'])
      .executeTakeFirst()
    const successor = await trx.selectFrom('api_keys').select('id').where('rotated_from', '=', id).executeTakeFirst()
    // Said first: an expired or revoked key that was rotated has a replacement, maybe a live one.
    if (successor !== undefined) throw new Error(`API key ${id} was rotated already: key ${successor.id} replaces it; rotate that one`)
    if (old === undefined || replaced === undefined) throw await notRotatable(trx, id)
    const expiresAt = replacement.expiry(replaced.expires_at === null ? undefined : Date.parse(replaced.expires_at) - Date.parse(replaced.created_at))
    const newId = await insertApiKey(trx, { hash: replacement.hash, hint: replacement.hint, name: old.name, scopes: old.scopes, expiresAt, rotatedFrom: id }, clock)
    return { id: newId, expiresAt, oldKeyExpiresAt: old.expires_at! }
  })
}

/** Why key `id` cannot be rotated, in a sentence for the operator. */
async function notRotatable (db: Db, id: bigint): Promise<Error> {
  const key = await db.selectFrom('api_keys').select(['revoked_at', 'expires_at']).where('id', '=', id).executeTakeFirst()
  if (key === undefined) return new Error(`no API key with id ${id}`)
  if (key.revoked_at !== null) return new Error(`API key ${id} is revoked: make a new one with keys create`)
  return new Error(`API key ${id} expired at ${key.expires_at}: make a new one with keys create`)
}

export async function countApiKeys (db: Db): Promise<number> {
  const { count } = await db.selectFrom('api_keys').select((eb) => eb.fn.countAll<bigint>().as('count')).executeTakeFirstOrThrow()
  return Number(count)
}

export async function updateApiKeyLastUsed (db: Db, id: bigint, lastUsedAt: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: lastUsedAt }).where('id', '=', id).execute()
}
