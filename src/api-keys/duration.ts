const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** The form of a duration: an integer and one unit, `s`, `m`, `h` or `d` (`90d`, `24h`). */
export const DURATION_PATTERN = '^[1-9][0-9]{0,5}[smhd]$'
const DURATION = new RegExp(DURATION_PATTERN)
/** The pattern in words, for the messages that refuse a duration. */
export const DURATION_RULE = 'an integer from 1 to 999999 and one unit of s, m, h or d, such as 90d or 24h'

/** Milliseconds in a duration such as `90d`; undefined when the text is not one. */
export function parseDuration (text: string): number | undefined {
  if (!DURATION.test(text)) return undefined
  return Number(text.slice(0, -1)) * UNIT_MS[text.at(-1) as keyof typeof UNIT_MS]
}

/** When a key made at `now` expires under API_KEY_DEFAULT_TTL (`defaultTtl`): undefined, never. */
export function defaultExpiry (defaultTtl: string | undefined, now: number): Date | undefined {
  const ttl = defaultTtl === undefined ? undefined : parseDuration(defaultTtl)
  return ttl === undefined ? undefined : new Date(now + ttl)
}
