/**
 * The service's one source of the time of day: timestamps, expiries, windows and retention all read
 * it, so that tests move time by passing their own clock instead of waiting.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch, as `Date.now()`. */
  now: () => number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock stopped at `instant`: for times that must be one, such as a key's creation and the expiry worked out from it. */
export function stoppedClock (instant: number): Clock {
  return { now: () => instant }
}

/** The clock's time as an ISO 8601 timestamp, the form the store keeps times in. */
export function isoNow (clock: Clock): string {
  return new Date(clock.now()).toISOString()
}
