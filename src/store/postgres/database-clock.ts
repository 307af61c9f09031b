import type { Clock } from '../../clock.js'
import type { StoreLog } from '../store.js'

/** How often the server's time is read again: its own clock may be stepped, or a failover bring another server's. */
export const CLOCK_READ_EVERY_MS = 60_000
/** Until a reading answers, how soon it is tried again. */
export const CLOCK_RETRY_MS = 1_000
/** The store's first statement waits this long at most for the first reading: a frozen server then costs its own deadline and no more. */
export const FIRST_READING_WAIT_MS = 1_000
/** Each reading takes the fastest of so many round trips: one slowed by a busy event loop, or by setting up a connection, says less of when the server answered. */
const SAMPLES = 3
/** A machine's clock this far from the server's is said in the log, once. */
const SKEW_WARNED_MS = 1_000

/**
 * The PostgreSQL server's time of day, carried between readings on this process's elapsed time.
 * Instances on one database compare times that others wrote (a webhook's lease and next attempt, a
 * key's expiry, an idempotency key's age): on each host's own clock, a skew of minutes between hosts,
 * or a step (NTP, a VM resumed), let one instance take another's lease early, or wait the step out
 * before a retry. While readings fail, the last stands (before the first, this machine's time of day).
 */
export class DatabaseClock implements Clock {
  readonly #local: Clock
  readonly #log: StoreLog
  /** The server's time of day minus this process's elapsed time, at the last reading. */
  #offset: number
  #answered = false
  #failureLogged = false
  #timer: NodeJS.Timeout | undefined
  #stopped = false

  constructor (local: Clock, log: StoreLog) {
    this.#local = local
    this.#log = log
    this.#offset = local.now() - local.elapsed()
  }

  readonly now = (): number => Math.floor(this.#local.elapsed() + this.#offset)

  readonly elapsed = (): number => this.#local.elapsed()

  /**
   * Reads the server's time (`readServerTime`: one statement's answer) now and then once a minute
   * (each second until one answers), until stopped. Resolves after the first reading, or after
   * FIRST_READING_WAIT_MS if it has not answered by then.
   */
  async follow (readServerTime: () => Promise<number>): Promise<void> {
    const readings = async () => {
      if (this.#stopped) return
      await this.#read(readServerTime)
      if (!this.#stopped) this.#timer = setTimeout(() => { void readings() }, this.#answered ? CLOCK_READ_EVERY_MS : CLOCK_RETRY_MS).unref()
    }
    let waited: NodeJS.Timeout | undefined
    await Promise.race([readings(), new Promise<void>((resolve) => { waited = setTimeout(resolve, FIRST_READING_WAIT_MS) })])
    clearTimeout(waited)
  }

  stop (): void {
    this.#stopped = true
    clearTimeout(this.#timer)
  }

  async #read (readServerTime: () => Promise<number>): Promise<void> {
    const sample = async () => {
      const sentAt = this.#local.elapsed()
      const serverTime = await readServerTime()
      const answeredAt = this.#local.elapsed()
      // The server answered somewhere within the round trip: halfway, give or take half of it.
      return { roundTrip: answeredAt - sentAt, offset: serverTime - (sentAt + answeredAt) / 2 }
    }
    try {
      let fastest = await sample()
      for (let taken = 1; taken < SAMPLES; taken++) {
        const next = await sample()
        if (next.roundTrip < fastest.roundTrip) fastest = next
      }
      this.#offset = fastest.offset
    } catch (error) {
      if (!this.#failureLogged) this.#log.warn({ err: error as Error }, `the database server's time could not be read: ${this.#answered ? 'its last reading stands' : 'this machine\'s clock is used'} until it can (see Clock steps in docs/operations.md)`)
      this.#failureLogged = true
      return
    }
    this.#failureLogged = false
    const skewMs = this.#local.now() - this.now()
    if (!this.#answered && Math.abs(skewMs) >= SKEW_WARNED_MS) {
      this.#log.warn({ skewMs }, `this machine's clock is ${(Math.abs(skewMs) / 1000).toFixed(1)} s ${skewMs < 0 ? 'behind' : 'ahead of'} the database server's: the service dates by the server's (keep both on NTP)`)
    }
    this.#answered = true
  }
}
