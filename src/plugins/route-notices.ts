import type { preValidationHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import { STABILITY_HEADER } from '../openapi/response-headers.js'
import { hasTrailingSlash } from './error-handler.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route is deprecated: its headers, and when and how it goes (see `deprecation`). */
    deprecation?: Deprecation
    /** Headers every answer of the route carries, errors included: set from its notices when it is made. */
    noticeHeaders?: Record<string, string>
  }
}

interface DeprecationNotice {
  /** When the operation became deprecated (may be in the past). */
  since: Date
  /** When it is removed. */
  sunset: Date
  /** Absolute or root-relative URL of the replacement. */
  successor: string
  /** The replacement in words, for the message of the 410 answered from the sunset on. */
  replacement: string
}

export interface Deprecation {
  /** RFC 9745 `Deprecation`, RFC 8594 `Sunset` and an RFC 8288 `Link` to the replacement. */
  headers: Record<string, string>
  sunset: Date
  replacement: string
}

/** A deprecated route's notice, as its `config.deprecation`. */
export function deprecation ({ since, sunset, successor, replacement }: DeprecationNotice): Deprecation {
  if (sunset < since) throw new Error('a sunset cannot come before the deprecation')
  return {
    headers: {
      deprecation: `@${Math.floor(since.getTime() / 1000)}`,
      sunset: sunset.toUTCString(),
      link: `<${successor}>; rel="successor-version"`
    },
    sunset,
    replacement
  }
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

/**
 * The day, as people write it: "5 December 2030". Not `toLocaleDateString`: its first call loads ICU's
 * data, 20 ms of every start's CPU for this one line.
 */
function dayOf (date: Date): string {
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`
}

/**
 * Adds a route's notices to every one of its answers, errors included: its deprecation headers, and
 * `API-Stability` for an operation marked `x-stability` (experimental or beta) in its schema.
 * Registered before authentication, so that a 401 carries them too. From its sunset on, a deprecated
 * route answers `410 gone` for any request, after authentication and its scope and before anything
 * else: the handler, and so the store, is not reached.
 */
export default fp<{ clock: Clock }>(async (app, { clock }) => {
  app.addHook('onRequest', (request, reply, done) => {
    const headers = request.routeOptions.config.noticeHeaders
    // A path with a trailing slash, which a route with a parameter last takes, reaches no operation.
    if (headers !== undefined && !hasTrailingSlash(request.url)) reply.headers(headers)
    done()
  })
  app.addHook('onRoute', (route) => {
    const notice = route.config?.deprecation
    const stability = (route.schema as { 'x-stability'?: string } | undefined)?.['x-stability']
    if (notice === undefined && stability === undefined) return
    route.config = { ...route.config, noticeHeaders: { ...notice?.headers, ...stability !== undefined && { [STABILITY_HEADER]: stability } } }
    if (notice === undefined) return
    const operation = (route.schema as { operationId?: string } | undefined)?.operationId ?? `${String(route.method)} ${route.url}`
    const gone = new ApiError(410, 'gone', `${operation} was removed on ${dayOf(notice.sunset)}; use ${notice.replacement}`)
    const refuseAfterSunset: preValidationHookHandler = (_request, _reply, done) => {
      if (clock.now() >= notice.sunset.getTime()) done(gone)
      else done()
    }
    route.preValidation = [...[route.preValidation ?? []].flat(), refuseAfterSunset]
  })
}, { name: 'route-notices' })
