import { atEndOfTurn } from '../end-of-turn.js'
import { isStoreUnavailable } from './store-errors.js'

interface Waiting<Item, Result> {
  item: Item
  resolve: (result: Result) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: items that arrive in the same turn of the event loop, or while the group before them
 * is committing (a round trip and the server's fsync on PostgreSQL), are committed together by one
 * call of `commit`, and each is answered only after it. So an answer still means "committed" while one
 * commit (one WAL write, one fsync) serves many requests.
 *
 * Pipelined, a group is handed to `commit` at the end of its turn without waiting for the one before:
 * for a committer that queues groups and merges those that wait (the SQLite writer thread), so that
 * the groups formed during one fsync wait for no round trip through this thread before the next.
 */
export class GroupCommit<Item, Result> {
  #waiting: Array<Waiting<Item, Result>> = []
  #committing = 0
  readonly #pipelined: boolean

  /** `commit` stores a group in one transaction and returns a result per item, in the order given. */
  constructor (private readonly commit: (items: Item[]) => Promise<Result[]> | Result[], { pipelined = false } = {}) {
    this.#pipelined = pipelined
  }

  /** Resolves once the item's group is committed; rejects, for each item of the group, when it is not. */
  add (item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      if (this.#waiting.push({ item, resolve, reject }) === 1 && (this.#pipelined || this.#committing === 0)) this.#commitSoon()
    })
  }

  #commitSoon (): void {
    atEndOfTurn(() => { void this.#commitGroup() })
  }

  async #commitGroup (): Promise<void> {
    const group = this.#waiting
    if (group.length === 0) return // failed with a group before it (see below)
    this.#waiting = []
    this.#committing++
    try {
      const results = await this.commit(group.map(({ item }) => item))
      group.forEach(({ resolve }, i) => resolve(results[i]!))
    } catch (error) {
      // The group was not committed (or, if a writer thread was lost meanwhile, may have been, unseen):
      // every request in it fails (503 for a store fault) and none is answered as committed. When the
      // store is unavailable, so do those that arrived meanwhile: a commit of their own would make them
      // wait past the deadline a request is promised, on a store that has just failed.
      const failed = isStoreUnavailable(error) ? [...group, ...this.#waiting.splice(0)] : group
      for (const { reject } of failed) reject(error)
    } finally {
      this.#committing--
      if (!this.#pipelined && this.#waiting.length > 0) this.#commitSoon()
    }
  }
}
