import type { Clock } from '../../clock.js'
import type { StoreLog } from '../store.js'

/** How often the server's time is read again: its own clock may be stepped, or a failover bring another server's. */
export const CLOCK_READ_EVERY_MS = 60_000
/** How soon after the first reading (one round trip) a finer one follows. */
export const CLOCK_REFINED_AFTER_MS = 1_000
/** Each later reading takes the fastest of so many round trips: one slowed by a busy event loop says less of when the server answered. */
const SAMPLES = 3
/** A machine's clock this far from the server's is said in the log, once. */
const SKEW_WARNED_MS = 1_000

/** The server's time of day (milliseconds since the Unix epoch), and when its statement was sent and answered on the clock's `elapsed()`. */
export interface ServerTimeReading {
  serverTime: number
  sentAt: number
  answeredAt: number
}

type ReadServerTime = () => Promise<ServerTimeReading>

/**
 * The PostgreSQL server's time of day, carried between readings on this process's elapsed time.
 * Instances on one database compare times that others wrote (a webhook's lease and next attempt, a
 * key's expiry, an idempotency key's age): on each host's own clock, a skew of minutes between hosts,
 * or a step (NTP, a VM resumed), let one instance take another's lease early, or wait the step out
 * before a retry. No statement runs before the first reading (see `known`): what a process dates
 * after one has reached the store is on the server's time. Later readings that fail leave the last.
 */
export class DatabaseClock implements Clock {
  readonly #local: Clock
  readonly #log: StoreLog
  /** The server's time of day minus this process's elapsed time, at the last reading; before the first, this machine's time of day. */
  #offset: number
  #known = false
  #firstReading: Promise<void> | undefined
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

  /** Whether the server's time has been read: until then, `known` must be awaited before a statement. */
  get isKnown (): boolean {
    return this.#known
  }

  /**
   * Reads the server's time (`readServerTime`: one statement's answer, timed), one reading at a time
   * whoever asks, and rejects with its error if it fails: the statement waiting for it fails as it
   * would have, and the next one reads again. Once read, it is read again a second later (finer),
   * then once a minute until stopped.
   */
  async known (readServerTime: ReadServerTime): Promise<void> {
    await (this.#firstReading ??= this.#readFirst(readServerTime).finally(() => { this.#firstReading = undefined }))
  }

  stop (): void {
    this.#stopped = true
    clearTimeout(this.#timer)
  }

  async #readFirst (readServerTime: ReadServerTime): Promise<void> {
    if (this.#known) return
    this.#offset = (await this.#sample(readServerTime)).offset
    this.#known = true
    const skewMs = this.#local.now() - this.now()
    if (Math.abs(skewMs) >= SKEW_WARNED_MS) {
      this.#log.warn({ skewMs }, `this machine's clock is ${(Math.abs(skewMs) / 1000).toFixed(1)} s ${skewMs < 0 ? 'behind' : 'ahead of'} the database server's: the service dates by the server's (keep both on NTP)`)
    }
    this.#readAgainIn(CLOCK_REFINED_AFTER_MS, readServerTime)
  }

  #readAgainIn (ms: number, readServerTime: ReadServerTime): void {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      void this.#readAgain(readServerTime).finally(() => { this.#readAgainIn(CLOCK_READ_EVERY_MS, readServerTime) })
    }, ms).unref()
  }

  async #readAgain (readServerTime: ReadServerTime): Promise<void> {
    try {
      let fastest = await this.#sample(readServerTime)
      for (let taken = 1; taken < SAMPLES; taken++) {
        const next = await this.#sample(readServerTime)
        if (next.roundTrip < fastest.roundTrip) fastest = next
      }
      this.#offset = fastest.offset
      this.#failureLogged = false
    } catch (error) {
      if (!this.#failureLogged) this.#log.warn({ err: error as Error }, 'the database server\'s time could not be read again: its last reading stands until it can (see Clock steps in docs/operations.md)')
      this.#failureLogged = true
    }
  }

  async #sample (readServerTime: ReadServerTime): Promise<{ roundTrip: number, offset: number }> {
    const { serverTime, sentAt, answeredAt } = await readServerTime()
    // The server answered somewhere within the round trip: halfway, give or take half of it.
    return { roundTrip: answeredAt - sentAt, offset: serverTime - (sentAt + answeredAt) / 2 }
  }
}
