import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { findApiKeyByHash, updateApiKeyLastUsed } from './api-key.repository.js'
import { API_KEY_LENGTH, hashApiKey, isWellFormedApiKey } from './api-key.service.js'
import { grantedScopes, type Scope } from './scopes.js'

export interface ApiKeyVerifierOptions {
  /** How long a looked-up key is trusted before the store is asked again; revocation takes at most this long. */
  cacheTtlMs: number
  cacheMax: number
  /** How often last-used times are written back, one UPDATE per key used since. */
  usageFlushMs: number
}

export const DEFAULT_VERIFIER_OPTIONS: ApiKeyVerifierOptions = { cacheTtlMs: 2000, cacheMax: 10_000, usageFlushMs: 10_000 }

interface CachedKey {
  revoked: boolean
  key: VerifiedKey
}

/** A key that may be used now: its id, what it may do, and when it stops working. */
export interface VerifiedKey {
  id: bigint
  scopes: ReadonlySet<Scope>
  /** Milliseconds since the epoch; undefined: never. */
  expiresAt: number | undefined
  /** The same instant as an HTTP-date, for the `API-Key-Expiration` header. */
  expiration: string | undefined
}

/** What `verify` answers for a key that was valid and has expired. */
export const EXPIRED = 'expired'
export type KeyCheck = VerifiedKey | typeof EXPIRED | undefined

/**
 * Checks presented keys against the store. Known keys are cached for a short time so that a request
 * costs no store round trip; unknown keys are not cached, so a key made a moment ago works at once.
 */
export class ApiKeyVerifier {
  readonly #db: Db
  readonly #clock: Clock
  readonly #cache: LRUCache<string, CachedKey>
  readonly #lookups = new Map<string, Promise<CachedKey | undefined>>()
  readonly #lastUsed = new Map<bigint, number>()
  readonly #flushTimer: NodeJS.Timeout
  #flushing: Promise<void> = Promise.resolve()

  constructor (db: Db, clock: Clock, options: ApiKeyVerifierOptions = DEFAULT_VERIFIER_OPTIONS) {
    this.#db = db
    this.#clock = clock
    // The cache's ages are read off the service's clock (time elapsed, not of day), so tests can expire entries without waiting.
    this.#cache = new LRUCache({ max: options.cacheMax, ttl: options.cacheTtlMs, ttlResolution: 0, perf: { now: clock.elapsed } })
    this.#flushTimer = setInterval(() => { this.flushUsage().catch(() => {}) }, options.usageFlushMs).unref()
  }

  /** The key when it is valid, not revoked and not expired; EXPIRED when it has expired; otherwise undefined. */
  async verify (presented: string): Promise<KeyCheck> {
    if (!isWellFormedApiKey(presented)) return undefined
    const hash = hashApiKey(presented)
    const key = this.#cache.get(hash) ?? await this.#lookUp(hash)
    return key === undefined ? undefined : this.#admit(key)
  }

  // One store query per key at a time: when a busy key's cache entry expires, every request of that
  // moment waits for the same lookup instead of each sending its own.
  #lookUp (hash: string): Promise<CachedKey | undefined> {
    let lookup = this.#lookups.get(hash)
    if (lookup === undefined) {
      lookup = findApiKeyByHash(this.#db, hash).then((row) => {
        if (row === undefined) return undefined
        // An expiry that cannot be read (a hand edit) counts as past, never as "never".
        const expiresAt = row.expires_at === null ? undefined : Date.parse(row.expires_at) || 0
        const key = {
          revoked: row.revoked_at !== null,
          key: { id: row.id, scopes: grantedScopes(row.scopes), expiresAt, expiration: expiresAt === undefined ? undefined : new Date(expiresAt).toUTCString() }
        }
        this.#cache.set(hash, key)
        return key
      }).finally(() => this.#lookups.delete(hash))
      this.#lookups.set(hash, lookup)
    }
    return lookup
  }

  /**
   * Without waiting: a valid key looked up in the last seconds, or EXPIRED; undefined when the key is
   * not in the cache (ask `verify`), revoked or malformed.
   */
  verifyCached (presented: string): KeyCheck {
    // Only keys found in the store are cached, so the checksum, which costs as much as the hash, is left
    // to `verify`; the length check keeps a long junk token from being hashed whole.
    if (presented.length !== API_KEY_LENGTH) return undefined
    const key = this.#cache.get(hashApiKey(presented))
    return key === undefined ? undefined : this.#admit(key)
  }

  // Keys are found by the SHA-256 of their text, never compared as text: the lookup's timing can
  // tell only about digests, which gives no way to a valid key. The expiry is checked on every use,
  // cached or not, so a key is refused from the millisecond it expires, on every instance.
  #admit ({ revoked, key }: CachedKey): KeyCheck {
    if (revoked) return undefined
    const now = this.#clock.now()
    if (key.expiresAt !== undefined && now >= key.expiresAt) return EXPIRED
    this.#lastUsed.set(key.id, now)
    return key
  }

  /**
   * Writes the last-used times gathered since the previous flush. Those it could not write (the store
   * down, say) are kept for the next one, unless the key was used again meanwhile: its later time is.
   * One flush at a time: one asked for while another writes (closing during the periodic one) waits
   * for it, so that it also writes the times that one puts back.
   */
  async flushUsage (): Promise<void> {
    const flush = this.#flushing.catch(() => {}).then(async () => { await this.#writeUsage() })
    this.#flushing = flush
    await flush
  }

  async #writeUsage (): Promise<void> {
    const entries = [...this.#lastUsed]
    this.#lastUsed.clear()
    for (const [i, [id, at]] of entries.entries()) {
      try {
        await updateApiKeyLastUsed(this.#db, id, new Date(at).toISOString())
      } catch (error) {
        for (const [unwritten, usedAt] of entries.slice(i)) if (!this.#lastUsed.has(unwritten)) this.#lastUsed.set(unwritten, usedAt)
        throw error
      }
    }
  }

  /** Stops the periodic flush and flushes once more; rejects if that fails (the times are then lost). */
  async close (): Promise<void> {
    clearInterval(this.#flushTimer)
    await this.flushUsage()
  }
}
