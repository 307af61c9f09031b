import { createHash } from 'node:crypto'
import type { Db } from '../db/database.js'
import { ApiError } from '../errors.js'
import { canonicalJson } from './canonical-json.js'
import { claimKey, deleteExpiredKeys, findStoredResponse, saveResponse } from './idempotency-key.repository.js'

const RETENTION_MS = 24 * 60 * 60 * 1000
const LOCK_NOT_AVAILABLE = '55P03'

/** What a create answered, kept so that a retry gets the same. */
export interface CreatedResponse {
  status: number
  /** The body as sent, JSON text. */
  body: string
  location: string | null
}

export interface IdempotentResult extends CreatedResponse {
  replayed: boolean
}

const IN_USE = new ApiError(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry later', {
  headers: { 'retry-after': '1' }
})
const REUSED = new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body')

/**
 * Runs a create at most once per (API key, Idempotency-Key) for 24 hours, as Stripe's API does: the
 * outcome is stored in the same transaction as what `create` writes, so a crash keeps both or
 * neither, and a retry with the same body gets the stored answer without creating anything.
 */
export class IdempotentCreates {
  // Requests of this instance still running, so a concurrent retry gets a 409 instead of queueing.
  readonly #inFlight = new Set<string>()

  constructor (private readonly db: Db) {}

  async run (apiKeyId: bigint, key: string, requestBody: unknown, create: (trx: Db) => Promise<CreatedResponse>): Promise<IdempotentResult> {
    const slot = `${apiKeyId}:${key}`
    if (this.#inFlight.has(slot)) throw IN_USE
    this.#inFlight.add(slot)
    try {
      return await this.#run(apiKeyId, key, createHash('sha256').update(canonicalJson(requestBody)).digest('hex'), create)
    } finally {
      this.#inFlight.delete(slot)
    }
  }

  async #run (apiKeyId: bigint, key: string, requestHash: string, create: (trx: Db) => Promise<CreatedResponse>): Promise<IdempotentResult> {
    const now = new Date()
    const notBefore = new Date(now.getTime() - RETENTION_MS).toISOString()
    const stored = await findStoredResponse(this.db, apiKeyId, key, notBefore)
    if (stored !== undefined) return replay(stored, requestHash)
    try {
      const outcome = await this.db.transaction().execute(async (trx): Promise<IdempotentResult | CreatedResponse> => {
        await deleteExpiredKeys(trx, notBefore)
        if (!await claimKey(trx, { api_key_id: apiKeyId, key, request_hash: requestHash, created_at: now.toISOString() })) {
          const winner = await findStoredResponse(trx, apiKeyId, key, notBefore)
          if (winner === undefined) throw IN_USE
          return replay(winner, requestHash)
        }
        const created = await create(trx)
        await saveResponse(trx, apiKeyId, key, { status_code: created.status, response_body: created.body, location: created.location })
        return created
      })
      return 'replayed' in outcome ? outcome : { ...outcome, replayed: false }
    } catch (error) {
      if ((error as { code?: unknown }).code === LOCK_NOT_AVAILABLE) throw IN_USE
      throw error
    }
  }
}

function replay (stored: { request_hash: string, status_code: number, response_body: string, location: string | null }, requestHash: string): IdempotentResult {
  if (stored.request_hash !== requestHash) throw REUSED
  // SQLite hands integers back as BigInt (safe integers are on for int64 columns).
  return { status: Number(stored.status_code), body: stored.response_body, location: stored.location, replayed: true }
}
