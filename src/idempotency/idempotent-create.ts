import { hash } from 'node:crypto'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { IdempotencyClaim, StoredResponse } from '../store/pet-store.js'
import { canonicalJson } from './canonical-json.js'

/** How long an answer is kept for retries with the same key. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000

export interface IdempotentResult {
  response: StoredResponse
  replayed: boolean
}

/** What a create made under a claim: the answer it stored with it, or the one stored before under the same key. */
export type ClaimedCreate =
  | { outcome: 'created', response?: StoredResponse | undefined } |
  { outcome: 'replayed', response: StoredResponse }

const IN_USE = new ApiError(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry later', {
  headers: { 'retry-after': '1' }
})
const REUSED = new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body')
// (Its body differs too, but "a different body" sent a client that reused a key across operations to compare bodies.)
const reusedForAnother = (collection: string) =>
  new ApiError(422, 'idempotency_key_reused', `This Idempotency-Key was used for another operation, a create at ${collection}: use a new key`)

/**
 * Runs a create at most once per (API key, Idempotency-Key) for 24 hours, as Stripe's API does: the
 * store keeps the answer in the same transaction as what it created (a crash keeps both or neither),
 * and a retry with the same body gets that answer without creating anything. One key serves one
 * create of any kind: a key reused for a create of another kind is refused, naming the collection
 * it created in.
 */
export class IdempotentCreates {
  // Requests of this instance still running, so a concurrent retry gets a 409 instead of queueing;
  // it also keeps two claims of one key out of one group commit.
  readonly #inFlight = new Set<string>()

  /** `findStored` reads the answer kept under a key, if one was kept since `notBefore`, without claiming it. */
  constructor (private readonly clock: Clock, private readonly findStored: (apiKeyId: bigint, key: string, notBefore: string) => Promise<StoredResponse | undefined>) {}

  /**
   * Claims `key` for `requestBody` and has `commit` create under the claim unless the key was used by
   * this API key before; `locationPrefix` followed by the new id is the created resource's URL.
   */
  async create (apiKeyId: bigint, key: string, requestBody: unknown, locationPrefix: string, commit: (claim: IdempotencyClaim) => Promise<ClaimedCreate>): Promise<IdempotentResult> {
    const slot = `${apiKeyId}:${key}`
    const requestHash = hash('sha256', canonicalJson(requestBody), 'hex') // one-shot, without a Hash object, as for keys
    const notBefore = new Date(this.clock.now() - IDEMPOTENCY_RETENTION_MS).toISOString()
    if (this.#inFlight.has(slot)) {
      // What is in flight may be a replay of a create answered long ago: its answer is kept, and is
      // this request's too. Read only here, so that the common path costs no read.
      const stored = await this.findStored(apiKeyId, key, notBefore)
      if (stored === undefined) throw IN_USE
      return resultOf({ outcome: 'replayed', response: stored }, requestHash, locationPrefix)
    }
    this.#inFlight.add(slot)
    try {
      return resultOf(await commit({ apiKeyId, key, requestHash, locationPrefix, notBefore }), requestHash, locationPrefix)
    } finally {
      this.#inFlight.delete(slot)
    }
  }
}

function resultOf (created: ClaimedCreate, requestHash: string, locationPrefix: string): IdempotentResult {
  if (created.outcome === 'created') return { response: created.response!, replayed: false }
  const { location } = created.response
  const collection = location === null ? undefined : collectionOf(location)
  if (collection !== undefined && collection !== collectionOf(locationPrefix)) throw reusedForAnother(collection.slice(0, -1))
  if (created.response.requestHash !== requestHash) throw REUSED
  return { response: created.response, replayed: true }
}

/**
 * The collection a created resource's URL names (`/v1/pets/` of `https://api.example.com/v1/pets/42`),
 * whatever PUBLIC_BASE_URL was when its answer was kept: another one's (set since, or a rolling
 * deploy's) is the same create.
 */
function collectionOf (url: string): string {
  return url.slice(url.lastIndexOf('/v1/'), url.lastIndexOf('/') + 1)
}
