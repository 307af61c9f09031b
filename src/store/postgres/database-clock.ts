import type { Clock } from '../../clock.js'

/** How often the server's time is read again: the process's own elapsed time drifts from it by milliseconds a day. */
export const CLOCK_READ_EVERY_MS = 60_000

/**
 * The PostgreSQL server's time of day, read before the store's first statement and once a minute,
 * carried between readings on this process's elapsed time. Instances on one database compare times
 * that others wrote (a webhook's lease and next attempt, a key's expiry, an idempotency key's age): on
 * each host's own clock, a skew of minutes between hosts, or a step (NTP, a VM resumed), let one
 * instance take another's lease early, or wait the step out before a retry. While reads fail, the
 * last reading stands (before the first, this machine's time of day).
 */
/** The server's time of day (milliseconds since the Unix epoch), and when it was read on the clock's `elapsed()`. */
export interface ServerTimeReading {
  serverTime: number
  readAt: number
}

export class DatabaseClock implements Clock {
  /** The server's time of day minus this process's elapsed time, at the last reading. */
  #offset: number
  #timer: NodeJS.Timeout | undefined

  constructor (private readonly local: Clock) {
    this.#offset = local.now() - local.elapsed()
  }

  readonly now = (): number => Math.floor(this.local.elapsed() + this.#offset)

  readonly elapsed = (): number => this.local.elapsed()

  /** Reads the server's time now, and then once a minute until stopped; resolves after the first reading, whether it answered or failed. */
  async follow (readServerTime: () => Promise<ServerTimeReading>): Promise<void> {
    let reading: Promise<void> | undefined
    const read = async () => {
      reading ??= this.#read(readServerTime).finally(() => { reading = undefined })
      await reading
    }
    this.#timer = setInterval(() => { void read() }, CLOCK_READ_EVERY_MS).unref()
    await read()
  }

  stop (): void {
    clearInterval(this.#timer)
  }

  /** A failed reading (the store unreachable) keeps the last. */
  async #read (readServerTime: () => Promise<ServerTimeReading>): Promise<void> {
    const reading = await readServerTime().catch(() => undefined)
    if (reading !== undefined) this.#offset = reading.serverTime - reading.readAt
  }
}
