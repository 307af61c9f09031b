import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { clientNetwork } from '../client-address.js'
import type { Clock } from '../clock.js'
import { ConfigError } from '../config.js'
import { ApiError } from '../errors.js'

const WINDOW_MS = 60_000
const REDIS_READY_TIMEOUT_MS = 2000
/** After Redis fails or is slow, requests pass uncounted for this long without asking it. */
export const REDIS_COOL_DOWN_MS = 10_000

/** Counts a request; a 429 is thrown once its key or address is over the limit. Synchronous without Redis. */
export type Admit = (request: FastifyRequest, reply: FastifyReply) => void | Promise<void>

export interface RateLimiter {
  /** Counts a request made with a valid key (`request.apiKeyId`). */
  admitKey: Admit
  /** Counts a request without valid credentials against its client address, so key guessing is throttled. */
  admitAnonymous: Admit
}

export interface RateLimiterOptions {
  perMinute: number
  /** Counters kept in memory without Redis, of each kind (keys, and client addresses, seen in the last minute). */
  maxCounters: number
  redisUrl: string | undefined
  /** How long a request waits for Redis to count it; past that it passes uncounted. */
  redisTimeoutMs: number
  /** Keeps the counters of different stores apart in a shared Redis. */
  namespace: string
  clock: Clock
}

/** What a request is counted under: its key's id, or its client address. */
type KeyOf = (request: FastifyRequest) => bigint | string

/**
 * Makes the function that counts a request of one kind (`kind` names it in a shared store) under what
 * `keyOf` gives it; undefined when it was not counted.
 */
type Counter = (kind: string, keyOf: KeyOf) => (request: FastifyRequest) => Verdict | Promise<Verdict | undefined>

interface Window {
  count: number
  /** When the window ends, in the clock's elapsed milliseconds (see Clock). */
  endsAt: number
}

interface Verdict {
  remaining: number
  resetSeconds: number
  exceeded: boolean
}

/**
 * Fixed one-minute windows, in memory or, with REDIS_URL, in Redis shared by every instance. Answers
 * carry the RateLimit and RateLimit-Policy headers of draft-ietf-httpapi-ratelimit-headers-11.
 * Undefined when limiting is off (a limit of 0).
 */
export async function createRateLimiter (app: FastifyInstance, { perMinute, maxCounters, redisUrl, redisTimeoutMs, namespace, clock }: RateLimiterOptions): Promise<RateLimiter | undefined> {
  if (perMinute === 0) return undefined
  const counter = redisUrl === undefined ? countInMemory(perMinute, maxCounters, clock) : await countInRedis(app, { redisUrl, redisTimeoutMs, namespace, perMinute, clock })
  const policy = `"default";q=${perMinute};w=${WINDOW_MS / 1000}`
  const answer = (verdict: Verdict | undefined, reply: FastifyReply) => {
    if (verdict === undefined) return // not counted: no state to tell
    const { remaining, resetSeconds, exceeded } = verdict
    const state = `"default";r=${remaining};t=${resetSeconds}`
    if (exceeded) {
      throw new ApiError(429, 'rate_limited', `Rate limit of ${perMinute} requests per minute exceeded; retry in ${resetSeconds} s`, {
        headers: { 'ratelimit-policy': policy, ratelimit: state, 'retry-after': String(resetSeconds) }
      })
    }
    reply.header('ratelimit-policy', policy).header('ratelimit', state)
  }
  const admit = (kind: string, keyOf: KeyOf): Admit => {
    const count = counter(kind, keyOf)
    return (request, reply) => {
      const verdict = count(request)
      return verdict instanceof Promise ? verdict.then((counted) => { answer(counted, reply) }) : answer(verdict, reply)
    }
  }
  return {
    admitKey: admit('key', (request) => request.apiKeyId),
    admitAnonymous: admit('address', (request) => clientNetwork(request.ip, request.socket.remoteAddress))
  }
}

/**
 * Counters in this process, counted without a promise: on the path of every request, a promise each
 * costs throughput (docs/benchmarks.md). Each kind keeps counters of its
 * own, found by the key's id or the address as it is (no string made per request), so that requests
 * from many addresses cannot push out the counters of keys. A plain Map, in the order the windows
 * started (a key goes back to the end when a new window starts), rather than lru-cache, whose every
 * read does bookkeeping a window does not need (an options object, the recency lists): the window
 * that started first is the one that ends first, so it is the one to forget.
 */
function countInMemory (perMinute: number, maxCounters: number, clock: Clock): Counter {
  return (_kind, keyOf) => {
    const windows = new Map<bigint | string, Window>()
    return (request) => {
      const key = keyOf(request)
      const now = clock.elapsed()
      let window = windows.get(key)
      if (window === undefined || window.endsAt <= now) {
        window = { count: 0, endsAt: now + WINDOW_MS }
        windows.delete(key)
        windows.set(key, window)
        forgetOldest(windows, maxCounters, now)
      }
      window.count++
      // At most the window: `now + WINDOW_MS - now` is a hair over it at some times, in floating point.
      const resetSeconds = Math.min(WINDOW_MS / 1000, Math.ceil((window.endsAt - now) / 1000))
      return { remaining: Math.max(0, perMinute - window.count), resetSeconds, exceeded: window.count > perMinute }
    }
  }
}

/**
 * Drops the windows that have ended, and past `max` windows those that started first even if they
 * have not: a key forgotten early starts a new window when it is next counted.
 */
function forgetOldest (windows: Map<bigint | string, Window>, max: number, now: number): void {
  for (const [key, window] of windows) {
    if (window.endsAt > now && windows.size <= max) return
    windows.delete(key)
  }
}

/**
 * Counters in Redis, shared by every instance. Every command has a deadline: past it, or on any
 * failure, the request passes uncounted, and so do all requests for a cool-down, without asking
 * Redis, so that a frozen or lost Redis costs one short wait, not one per request. Logged once per
 * outage, and again when Redis answers.
 */
async function countInRedis (app: FastifyInstance, { redisUrl, redisTimeoutMs, namespace, perMinute, clock }: Omit<RateLimiterOptions, 'maxCounters'> & { redisUrl: string }): Promise<Counter> {
  const redis = await connectRedis(redisUrl, redisTimeoutMs)
  // A connection that fails (refused, wrong password, TLS to a plain server) is seen, and logged, through
  // the commands that fail then, whose own error says only that the stream is not writable: its cause is kept.
  let connectionError: Error | undefined
  redis.on('error', (error: Error) => { connectionError = error })
  redis.on('ready', () => { connectionError = undefined })
  app.addHook('onClose', async () => { redis.disconnect() })
  await whenReady(redis, REDIS_READY_TIMEOUT_MS)
  requireCredentials(redis, connectionError)
  await requireDatabase(redis)
  const prefix = `petstore:${namespace}:`
  const count = redisCount(redis, prefix)
  const unusable = await requirePermission(redis, count, prefix)
  // Refused later (a Redis down at start, or its password changed since), requests go unlimited until
  // the service is set up again: said once each time, where a request's failure says only "failed".
  let refusalLogged = false
  redis.on('error', (error: Error) => {
    if (refusalLogged || !isCredentialsRefusal(error)) return
    refusalLogged = true
    app.log.error({ err: error }, 'the Redis server refuses REDIS_URL\'s user or password: requests are not limited until REDIS_URL is set right')
  })
  redis.on('ready', () => { refusalLogged = false })
  let coolingUntil = 0
  // An outage at start is logged now, not with the first request it fails: one that keeps Redis from
  // answering, or from counting (a read-only replica, a full memory).
  let failing = redis.status !== 'ready' || unusable !== undefined
  if (failing) app.log.warn({ err: unusable ?? connectionError }, `rate-limit store (Redis) cannot be used at start: requests are not limited until it answers${tlsNote(redisUrl, connectionError)}`)
  return (kind, keyOf) => async (request) => {
    if (clock.elapsed() < coolingUntil) return undefined
    try {
      const [current, ttlMs] = await count(`${kind}:${keyOf(request)}`)
      if (failing) app.log.info('rate-limit store (Redis) answers again: requests are limited again')
      failing = false
      return { remaining: Math.max(0, perMinute - current), resetSeconds: Math.ceil(ttlMs / 1000), exceeded: current > perMinute }
    } catch (error) {
      coolingUntil = clock.elapsed() + REDIS_COOL_DOWN_MS
      if (!failing) app.log.warn({ err: redis.status === 'ready' ? error : connectionError ?? error }, `rate-limit store (Redis) failed: requests are not limited for the next ${REDIS_COOL_DOWN_MS / 1000} s, then Redis is tried again`)
      failing = true
      return undefined
    }
  }
}

/**
 * A count in Redis, in one script: the counter's new value and the milliseconds left in its window.
 * Any counter found without an expiry is given the window, not only a new one: a count whose PEXPIRE
 * Redis refused (for a moment, an ACL being changed) would otherwise leave a counter that never
 * expires, its key or address refused for good.
 */
const COUNT_SCRIPT = `
local current = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`

/** Counts once what `name` names (`key:<id>`, `address:<address>`), in a counter named after `prefix`. */
type RedisCount = (name: string) => Promise<[current: number, ttlMs: number]>

function redisCount (redis: Redis, prefix: string): RedisCount {
  // Sent once (EVAL), then named by its digest (EVALSHA).
  redis.defineCommand('petstoreCount', { numberOfKeys: 1, lua: COUNT_SCRIPT })
  const counting = redis as Redis & { petstoreCount: (key: string, windowMs: number) => Promise<[number, number]> }
  return async (name) => await counting.petstoreCount(`${prefix}${name}`, WINDOW_MS)
}

/** What a timeout may mean with TLS asked for: a plain Redis reads the TLS hello and waits for a line end. */
function tlsNote (redisUrl: string, error: Error | undefined): string {
  const timedOut = (error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT'
  return timedOut && redisUrl.startsWith('rediss:') ? '; REDIS_URL asks for TLS (rediss://): a server that does not speak it lets the connection time out' : ''
}

// ioredis is loaded only when REDIS_URL is set, to keep it out of every other start. Through its
// default export, its `module.exports`: a CommonJS package in a chunk of the bundle (scripts/bundle.mjs)
// has no other export once imported, where Node itself finds its named ones.
async function connectRedis (url: string, commandTimeout: number): Promise<Redis> {
  const { default: ioredis } = await import('ioredis')
  // Without a queue, commands fail at once while Redis is disconnected.
  return new ioredis.Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 1000, commandTimeout })
}

/**
 * Refuses a database number the server does not have (16 by default): ioredis reports the refused
 * SELECT as an error event and goes on, and the counters went to database 0, beside another
 * application's keys. Checked once Redis answers; an outage at start is not this.
 */
async function requireDatabase (redis: Redis): Promise<void> {
  const { db = 0 } = redis.options
  if (db === 0 || redis.status !== 'ready') return
  try {
    await redis.select(db)
  } catch (error) {
    if ((error as Error).name !== 'ReplyError') return
    redis.disconnect()
    throw new ConfigError(`Invalid configuration: REDIS_URL names database ${db}, which the Redis server does not have (${(error as Error).message})`, { cause: error })
  }
}

/**
 * Refuses a Redis user whose ACL forbids the counts (the script they run, a command it calls, or the
 * service's keys): as with a refused password, every request would go unlimited until the service is
 * set up again, with a warning every 10 s. Two counts, made as every count is, on a key of this start's
 * own (it expires with its window): the first sends the script (EVAL) and sets the window (INCR, PTTL,
 * PEXPIRE), the second names it (EVALSHA), so that every command a count may send is tried, whatever
 * the keys hold. Any other failure (an outage, a read-only replica, a full memory) may end by itself:
 * it is returned, and requests pass uncounted meanwhile.
 */
async function requirePermission (redis: Redis, count: RedisCount, prefix: string): Promise<Error | undefined> {
  if (redis.status !== 'ready') return undefined
  const key = `permission-check:${randomUUID()}`
  const countOnce = async () => await count(key).then(() => null, (error: Error) => error)
  const failure = await countOnce() ?? await countOnce()
  if (failure === null) return undefined
  if (!isPermissionRefusal(failure)) return failure
  // A count refused halfway (PEXPIRE, PTTL, or EVALSHA after the first count) leaves its key, without
  // an expiry if PEXPIRE was refused: it is deleted, unless the user may not delete it either.
  await redis.del(`${prefix}${key}`).catch(() => {})
  redis.disconnect()
  throw new ConfigError(`Invalid configuration: the Redis server does not let REDIS_URL's user count requests (${failure.message}); ` +
    `it needs EVAL, EVALSHA, INCR, PEXPIRE and PTTL on the keys ${prefix}*`, { cause: failure })
}

// Redis's words for what a user's ACL forbids: a command or a key (NOPERM), or a command a script calls
// (Redis 7.0 says "ERR The user executing the script can't run this command..."; matched anywhere, as
// a version may say something before it).
function isPermissionRefusal (error: Error): boolean {
  return error.name === 'ReplyError' && /^NOPERM |The user executing the script can't run/.test(error.message)
}

/**
 * Refuses credentials the server refuses: unlike an outage, which ends, they would leave every request
 * unlimited until the service is set up again, with one warning at its start.
 */
function requireCredentials (redis: Redis, connectionError: Error | undefined): void {
  if (redis.status === 'ready' || !isCredentialsRefusal(connectionError)) return
  redis.disconnect()
  throw new ConfigError(`Invalid configuration: the Redis server refuses REDIS_URL's user or password (${connectionError!.message})`, { cause: connectionError })
}

// Redis's words for a connection without the password it asks for (NOAUTH) or with a wrong one
// (WRONGPASS; before Redis 6, "ERR invalid password").
function isCredentialsRefusal (error: Error | undefined): boolean {
  return error?.name === 'ReplyError' && /^(NOAUTH |WRONGPASS |ERR invalid password)/.test(error.message)
}

/**
 * Resolves once Redis is connected, or refuses the credentials, or after the timeout (requests then go
 * unlimited until it is connected).
 */
async function whenReady (redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      redis.off('ready', done)
      redis.off('error', refused)
      resolve()
    }
    // After the listener that keeps the connection's error (countInRedis), which requireCredentials reads.
    const refused = (error: Error) => { if (isCredentialsRefusal(error)) done() }
    const timer = setTimeout(done, timeoutMs)
    redis.once('ready', done)
    redis.on('error', refused)
  })
}
