const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const INTERVAL = '[1-9][0-9]{0,5}(ms|s|m|h|d)'

/** WEBHOOK_RETRY_SCHEDULE: the waits before each retry, comma-separated, 1 to 20 of them. */
export const RETRY_SCHEDULE_PATTERN = `^${INTERVAL}(,${INTERVAL}){0,19}$`
/** The pattern in words, for the message that refuses a schedule. */
export const RETRY_SCHEDULE_RULE = '1 to 20 waits, comma-separated, each an integer from 1 to 999999 and one unit of ms, s, m, h or d, such as 5s,5m,30m,2h'

/**
 * The default, after Standard Webhooks' reference schedule stretched to about three days: the first
 * retry within 10 s, then longer and longer waits adding up to 71 h 35 min before the subscription
 * is disabled.
 */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,20h'

/** The schedule's waits in milliseconds; the text is one RETRY_SCHEDULE_PATTERN accepts. */
export function parseRetrySchedule (text: string): number[] {
  return text.split(',').map((interval) => {
    const [, count, unit] = /^(\d+)(ms|s|m|h|d)$/.exec(interval)!
    return Number(count) * UNIT_MS[unit as keyof typeof UNIT_MS]
  })
}

/**
 * The wait before retry number `retry` (1 for the first), within 20 % either side of the schedule's
 * so that receivers failing together are not retried together; undefined when the schedule is spent.
 */
export function retryDelay (schedule: readonly number[], retry: number, random: () => number = Math.random): number | undefined {
  const wait = schedule[retry - 1]
  return wait === undefined ? undefined : Math.round(wait * (0.8 + 0.4 * random()))
}
