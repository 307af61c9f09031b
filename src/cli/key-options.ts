import { InvalidArgumentError } from 'commander'
import { DURATION_RULE, defaultExpiry, parseDuration } from '../api-keys/duration.js'
import { scopeList, UnknownScopeError } from '../api-keys/scopes.js'
import { hasUnprintable } from '../printable.js'

/** `--scope`, repeatable: each checked as it is read, gathered in order. */
export function collectScope (scope: string, scopes: string[] = []): string[] {
  try {
    scopeList([scope])
  } catch (error) {
    if (error instanceof UnknownScopeError) throw new InvalidArgumentError(error.message)
    throw error
  }
  return [...scopes, scope]
}

const MAX_KEY_NAME_CHARS = 100

/**
 * `--name`: 1 to 100 characters once trimmed, without control or direction characters, as `keys
 * list` prints it to a terminal: a line break or an escape sequence in a name would forge the table.
 */
export function parseKeyName (text: string): string {
  const name = text.trim()
  // U+FFFD is what Node makes of bytes that are not UTF-8 in an argument; a direction override (U+202E)
  // would show the rest of its row in `keys list` reversed.
  if (name === '' || [...name].length > MAX_KEY_NAME_CHARS || hasUnprintable(name) || name.includes('\ufffd')) {
    throw new InvalidArgumentError(`a key name is 1 to ${MAX_KEY_NAME_CHARS} characters of UTF-8, without control or direction characters`)
  }
  return name
}

/** `--expires-in` and `--overlap`: an integer and one unit of s, m, h or d; in milliseconds. */
export function parseDurationOption (text: string): number {
  const ms = parseDuration(text)
  if (ms === undefined) throw new InvalidArgumentError(`a duration is ${DURATION_RULE}`)
  return ms
}

/** Keys are cached for seconds: a shorter overlap could end before every server has seen it. */
const MIN_OVERLAP_MS = 60_000

/** `--overlap`: a duration of at least a minute. */
export function parseOverlap (text: string): number {
  const ms = parseDurationOption(text)
  if (ms < MIN_OVERLAP_MS) throw new InvalidArgumentError('an overlap is at least 1m, so that every server has seen the old key\'s new expiry')
  return ms
}

// Its T and Z in either case, as RFC 3339 allows (section 5.6).
const RFC_3339 = /^(\d{4}-\d\d-\d\d)[Tt]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/

/** `--expires-at`: an RFC 3339 date and time with its offset, such as 2027-03-01T00:00:00Z. */
export function parseInstant (text: string): Date {
  const date = RFC_3339.exec(text)?.[1]
  // A day the calendar does not have (2027-02-30) would otherwise roll over into the next month; a
  // month it does not have (2027-13-01) is no date at all.
  const day = date === undefined ? undefined : new Date(`${date}T00:00:00Z`)
  const realDay = day !== undefined && !Number.isNaN(day.getTime()) && day.toISOString().startsWith(date!)
  if (!realDay) throw new InvalidArgumentError('a date and time in RFC 3339, with its offset, such as 2027-03-01T00:00:00Z')
  // ECMAScript's date format has them in upper case; lower case is left to each engine's own guess.
  const instant = new Date(text.toUpperCase())
  // Later, it is written +010000-01-01T...: stored as text, it compared as earlier than any date.
  if (instant.getTime() > LAST_INSTANT) throw new InvalidArgumentError('a date and time no later than 9999-12-31T23:59:59Z')
  return instant
}

const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z')

/** The lifetime options of `keys create` and `keys rotate`. */
export interface LifetimeOptions {
  expiresIn?: number
  expiresAt?: Date
}

/** Throws for both options at once, or for a moment already past at `now` (unless unknown yet). */
export function refuseImpossibleLifetime ({ expiresIn, expiresAt }: LifetimeOptions, now: number | undefined): void {
  if (expiresIn !== undefined && expiresAt !== undefined) throw new InvalidArgumentError('give --expires-in or --expires-at, not both')
  if (expiresAt !== undefined && now !== undefined && expiresAt.getTime() <= now) throw new InvalidArgumentError(`--expires-at ${expiresAt.toISOString()} is already past`)
}

/** When a new key expires: as asked, else after API_KEY_DEFAULT_TTL (`defaultTtl`), else never; throws as refuseImpossibleLifetime. */
export function expiryOf (lifetime: LifetimeOptions, defaultTtl: string | undefined, now: number): Date | undefined {
  refuseImpossibleLifetime(lifetime, now)
  const { expiresIn, expiresAt } = lifetime
  return expiresAt ?? (expiresIn === undefined ? defaultExpiry(defaultTtl, now) : new Date(now + expiresIn))
}

/**
 * When a key made by keys rotate expires: as asked, else as long after `now` as the key it replaces
 * was to live (`replacedLifetimeMs`, from its creation to its expiry; no later than a stored expiry
 * may be), else as expiryOf says for a new key.
 */
export function replacementExpiryOf (lifetime: LifetimeOptions, defaultTtl: string | undefined, now: number, replacedLifetimeMs: number | undefined): Date | undefined {
  const asked = lifetime.expiresIn !== undefined || lifetime.expiresAt !== undefined
  if (asked || replacedLifetimeMs === undefined) return expiryOf(lifetime, defaultTtl, now)
  return new Date(Math.min(now + replacedLifetimeMs, LAST_INSTANT))
}
