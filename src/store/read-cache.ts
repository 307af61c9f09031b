import { LRUCache } from 'lru-cache'

/** Cached answers are JSON text; the cache holds at most this many characters of them and their keys. */
const MAX_CACHED_CHARS = 8 * 1024 * 1024
/** What an entry costs beyond its text (the answer object, the key, the cache's own slots), in characters. */
const ENTRY_OVERHEAD_CHARS = 128

export interface CachedAnswer {
  /** The JSON text of the answer; its length is its size in the cache. */
  json: string
}

/**
 * Answers repeated reads (a page of pets, a pet) from memory while the store has not changed since
 * they were read, so that a hot page costs a look at what changes with every commit instead of a
 * query. Any commit the store's version reflects empties it.
 */
export class StoreReadCache {
  readonly #answers = new LRUCache<string, CachedAnswer>({
    maxSize: MAX_CACHED_CHARS,
    sizeCalculation: (answer, key) => ENTRY_OVERHEAD_CHARS + key.length + answer.json.length
  })

  #version: string | undefined

  /**
   * `version` returns what changes with every commit to the store, or undefined while the store
   * cannot tell (see SqliteStore's change detection and PostgresChangeFeed): then every read is loaded.
   */
  constructor (private readonly version: () => string | undefined) {}

  /**
   * The answer for `key`: from memory while the store is unchanged, else from `load` (and kept,
   * unless it is undefined: what is not found is not kept, so that misses cannot crowd out answers).
   */
  get<T extends CachedAnswer | undefined> (key: string, load: () => T): T {
    // Read before loading: a commit that lands in between changes the version, so what is kept under
    // this one is dropped at the next read rather than served stale.
    const version = this.#current()
    const cached = this.#answers.get(key) as T
    if (cached !== undefined) return cached
    const answer = load()
    if (answer !== undefined && version !== undefined) this.#answers.set(key, answer)
    return answer
  }

  /** `get` for a store read asynchronously: what is loaded is kept only if no commit was seen meanwhile. */
  async getAsync<T extends CachedAnswer | undefined> (key: string, load: () => Promise<T>): Promise<T> {
    const version = this.#current()
    const cached = this.#answers.get(key) as T
    if (cached !== undefined) return cached
    const answer = await load()
    if (answer !== undefined && version !== undefined && this.#current() === version) this.#answers.set(key, answer)
    return answer
  }

  /** The store's version, after emptying the cache if it changed since the last read. */
  #current (): string | undefined {
    const version = this.version()
    if (version !== this.#version) {
      this.#answers.clear()
      this.#version = version
    }
    return version
  }
}
