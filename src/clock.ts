/**
 * The service's one source of time: timestamps, expiries, windows and retention all read it, so that
 * tests move time by passing their own clock instead of waiting.
 */
export interface Clock {
  /** The time of day: milliseconds since the Unix epoch, as `Date.now()`, for what is dated (stored, shared, shown). */
  now: () => number
  /**
   * Milliseconds that only move forward, as `performance.now()`, for how long something has lasted
   * (a cache entry's age, a rate-limit window): a step of the time of day (NTP, a VM resumed) must not
   * stretch or cut it. A step back of an hour kept a revoked key working for that hour.
   */
  elapsed: () => number
}

export const systemClock: Clock = { now: () => Date.now(), elapsed: () => performance.now() }

/** A clock stopped at `instant`: for times that must be one, such as a key's creation and the expiry worked out from it. */
export function stoppedClock (instant: number): Clock {
  return { now: () => instant, elapsed: systemClock.elapsed }
}

/** The clock's time as an ISO 8601 timestamp, the form the store keeps times in. */
export function isoNow (clock: Clock): string {
  return new Date(clock.now()).toISOString()
}
