// @fastify/rate-limit's Redis store, which the package does not type apart from its options.
declare module '@fastify/rate-limit/store/RedisStore.js' {
  import type { FastifyRateLimitStore } from '@fastify/rate-limit'
  import type { Redis } from 'ioredis'

  export default class RedisStore {
    constructor (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key?: string)
    incr: FastifyRateLimitStore['incr']
    child (routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore
  }
}
