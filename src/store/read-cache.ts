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
   * The answer for `key` as of `version`, what changes with every commit to the store, read before
   * loading (undefined while the store cannot tell: then every read is loaded): from memory while the
   * store is unchanged, else from `load` (and kept, unless it is undefined: what is not found is not
   * kept, so that misses cannot crowd out answers). A commit that lands between the version's read and
   * the load changes the version: what is kept under this one is dropped at the next read rather than
   * served stale.
   */
  get<T extends CachedAnswer | undefined> (key: string, version: string | undefined, load: () => T): T {
    this.#see(version)
    const cached = this.#answers.get(key) as T
    if (cached !== undefined) return cached
    const answer = load()
    if (answer !== undefined && version !== undefined) this.#answers.set(key, answer)
    return answer
  }

  /** `get` for a store read asynchronously: what is loaded is kept only if `version` says no commit was seen meanwhile. */
  async getAsync<T extends CachedAnswer | undefined> (key: string, version: () => string | undefined, load: () => Promise<T>): Promise<T> {
    const before = version()
    this.#see(before)
    const cached = this.#answers.get(key) as T
    if (cached !== undefined) return cached
    const answer = await load()
    if (answer !== undefined && before !== undefined && version() === before) this.#answers.set(key, answer)
    return answer
  }

  /** Empties the cache if the store's version changed since the last read. */
  #see (version: string | undefined): void {
    if (version !== this.#version) {
      this.#answers.clear()
      this.#version = version
    }
  }
}
