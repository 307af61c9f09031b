import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Headers announcing that the route is deprecated, built by `deprecationHeaders`. */
    deprecation?: Record<string, string>
  }
}

interface DeprecationNotice {
  /** When the operation became deprecated (may be in the past). */
  since: Date
  /** When it will be removed. */
  sunset: Date
  /** Absolute or root-relative URL of the replacement. */
  successor: string
}

/** RFC 9745 `Deprecation`, RFC 8594 `Sunset` and an RFC 8288 `Link` to the replacement. */
export function deprecationHeaders ({ since, sunset, successor }: DeprecationNotice): Record<string, string> {
  if (sunset < since) throw new Error('a sunset cannot come before the deprecation')
  return {
    deprecation: `@${Math.floor(since.getTime() / 1000)}`,
    sunset: sunset.toUTCString(),
    link: `<${successor}>; rel="successor-version"`
  }
}

/**
 * Adds a route's deprecation headers to every one of its responses, errors included; registered
 * before authentication so that a 401 carries them too.
 */
export default fp(async (app) => {
  app.addHook('onRequest', (request, reply, done) => {
    const headers = request.routeOptions.config.deprecation
    if (headers !== undefined) reply.headers(headers)
    done()
  })
}, { name: 'deprecation' })
