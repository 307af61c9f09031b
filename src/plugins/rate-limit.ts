import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { ApiError } from '../errors.js'

const WINDOW_MS = 60_000
const REDIS_READY_TIMEOUT_MS = 2000

export interface RateLimiter {
  /** Counts a request made with a valid key (`request.apiKeyId`); throws a 429 once the key is over its limit. */
  admitKey: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  /** Counts a request without valid credentials against its client address, so key guessing is throttled. */
  admitAnonymous: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
}

export interface RateLimiterOptions {
  perMinute: number
  redisUrl: string | undefined
  /** Keeps the counters of different stores apart in a shared Redis. */
  namespace: string
}

/**
 * Fixed one-minute windows counted by @fastify/rate-limit, in memory or, with REDIS_URL, in Redis
 * shared by every instance. Answers carry the RateLimit and RateLimit-Policy headers of
 * draft-ietf-httpapi-ratelimit-headers-11 (the plugin's own draft headers are an older draft's).
 * Undefined when limiting is off (a limit of 0).
 */
export async function createRateLimiter (app: FastifyInstance, { perMinute, redisUrl, namespace }: RateLimiterOptions): Promise<RateLimiter | undefined> {
  if (perMinute === 0) return undefined
  // Without a queue, commands fail at once while Redis is down, and limiting fails open (skipOnError)
  // rather than taking the API down with it.
  const redis = redisUrl === undefined ? undefined : await connectRedis(redisUrl)
  redis?.on('error', (error) => app.log.warn({ err: error }, 'rate-limit store unavailable: requests are not limited'))
  app.addHook('onClose', async () => { redis?.disconnect() })
  if (redis !== undefined) await whenReady(redis, REDIS_READY_TIMEOUT_MS)
  await app.register(rateLimit, { global: false, redis, nameSpace: `petstore:${namespace}:`, skipOnError: true })

  const policy = `"default";q=${perMinute};w=${WINDOW_MS / 1000}`
  const limiter = (prefix: string, key: (request: FastifyRequest) => string) => {
    const check = app.createRateLimit({ max: perMinute, timeWindow: WINDOW_MS, keyGenerator: (request) => prefix + key(request) })
    return async (request: FastifyRequest, reply: FastifyReply) => {
      const result = await check(request)
      if (result.isAllowed) return
      const headers = { 'ratelimit-policy': policy, ratelimit: `"default";r=${result.remaining};t=${result.ttlInSeconds}` }
      if (result.isExceeded) {
        throw new ApiError(429, 'rate_limited', `Rate limit of ${perMinute} requests per minute exceeded; retry in ${result.ttlInSeconds} s`, {
          headers: { ...headers, 'retry-after': String(result.ttlInSeconds) }
        })
      }
      reply.headers(headers)
    }
  }

  return {
    admitKey: limiter('key:', (request) => String(request.apiKeyId)),
    admitAnonymous: limiter('address:', (request) => request.ip)
  }
}

// ioredis is loaded only when REDIS_URL is set, to keep it out of every other start.
async function connectRedis (url: string): Promise<Redis> {
  const { Redis } = await import('ioredis')
  return new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 1000 })
}

/** Resolves once Redis is connected, or after the timeout (requests then go unlimited until it is). */
async function whenReady (redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs)
    redis.once('ready', () => {
      clearTimeout(timer)
      resolve()
    })
  })
}
