import type { Worker } from 'node:worker_threads'
import { startWorker } from './worker-thread.js'

const CHECKPOINT_INTERVAL_MS = 100
/** How long after the store opens the thread starts, unless told (see the constructor). */
const CHECKPOINT_START_DELAY_MS = 1000
/** SQLite's own threshold, for connections when no thread checkpoints. */
export const SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES = 1000
/**
 * While the thread runs, a connection checkpoints on its own only past this many WAL pages (40 MB):
 * a safety net, reached by a long run of small commits that never pause (see WAL_SIZE_LIMIT_BYTES).
 */
export const AUTOCHECKPOINT_SAFETY_NET_PAGES = 10_000

export interface CheckpointerEvents {
  /** A checkpoint failed (it is tried again on the next turn). */
  onCheckpointError: (error: Error) => void
  /** The thread stopped unexpectedly: connections must checkpoint on their commits again. */
  onFailure: (error: Error) => void
}

/**
 * Checkpoints a SQLite file store's WAL on a thread of its own. SQLite checkpoints on the commit
 * that takes the WAL past 1,000 pages, inside that commit: under steady creates, several times a
 * second a commit on the event loop took 2 to 5 ms instead of a tenth of one, and every request
 * waited meanwhile, which showed in the p99 latency. Here the commit only appends to the WAL, as
 * long as its connection's threshold is `AUTOCHECKPOINT_SAFETY_NET_PAGES`.
 */
export class WalCheckpointer {
  readonly #events: CheckpointerEvents
  readonly #path: string
  readonly #starting: NodeJS.Timeout
  #worker: Worker | undefined
  #stopped = false

  /**
   * The thread starts a second after the store opens: a store open for less (a command such as
   * `keys list`, most tests) never needs it, since the WAL it writes is small and the last connection
   * to close checkpoints it, while a thread's start cost 140 ms of CPU (and `keys list` waited 70 ms
   * for it). In that second the connections' threshold is the safety net already: the WAL may grow,
   * and commits stay fast.
   */
  constructor (path: string, events: CheckpointerEvents, startDelayMs = CHECKPOINT_START_DELAY_MS) {
    this.#path = path
    this.#events = events
    this.#starting = setTimeout(() => { this.#start() }, startDelayMs).unref()
  }

  #start (): void {
    const { onCheckpointError, onFailure } = this.#events
    const worker = this.#worker = startWorker('wal-checkpoint.worker', import.meta.url, { path: this.#path, intervalMs: CHECKPOINT_INTERVAL_MS })
    worker.unref()
    worker.on('message', ({ message, code }: { message: string, code: unknown }) => {
      onCheckpointError(Object.assign(new Error(message), { code }))
    })
    worker.on('error', (error) => {
      this.#stopped = true
      onFailure(error)
    })
  }

  /**
   * Ends the thread, if it started, after its current checkpoint if any: a checkpoint is never cut
   * short (the thread stops only once back in JavaScript), nor would one cut short lose anything,
   * and better-sqlite3 closes the thread's connection as it ends.
   */
  async close (): Promise<void> {
    if (this.#stopped) return
    this.#stopped = true
    clearTimeout(this.#starting)
    await this.#worker?.terminate()
  }
}
