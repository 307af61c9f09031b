import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { EXPIRED, type ApiKeyVerifier, type KeyCheck, type VerifiedKey } from '../api-keys/api-key.verifier.js'
import type { Scope } from '../api-keys/scopes.js'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import { countHeaderLines, repeatedHeader } from '../header-lines.js'
import { hasTrailingSlash } from './error-handler.js'
import type { RateLimiter } from './rate-limit.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The id of the API key the request was made with. */
    apiKeyId: bigint
    /** What that key may do; null until the key is checked. */
    apiKeyScopes: ReadonlySet<Scope> | null
  }
  interface FastifyContextConfig {
    /** The scope a key must hold to call the route; every route behind a key names one. */
    scope?: Scope
  }
}

// RFC 7235: the scheme name is case-insensitive, and one or more spaces precede the credentials.
const BEARER = /^Bearer +(.*)$/i

/** The credentials of an `Authorization: Bearer` header, if it is one. */
export function bearerToken (authorization: string | undefined): string | undefined {
  const credentials = BEARER.exec(authorization ?? '')?.[1]
  return credentials === undefined ? undefined : withoutTrailingSpace(credentials)
}

/**
 * Without the spaces and tabs after it, which are not a header value's (RFC 9110, section 5.5); other
 * whitespace is (trimEnd took U+00A0, a byte 0xA0 read as Latin-1, away too). By hand: a lazy
 * pattern doing it took 27 ms for a header of 15 KB of spaces.
 */
function withoutTrailingSpace (text: string): string {
  let end = text.length
  while (end > 0 && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--
  return end === text.length ? text : text.slice(0, end)
}

/** A key expiring sooner than this says so on every answer, as GitHub's tokens do. */
const EXPIRATION_NOTICE_MS = 7 * 24 * 3_600_000

const NO_CREDENTIALS = new ApiError(401, 'unauthorized', 'An API key is required: send Authorization: Bearer <API_KEY>', {
  headers: { 'www-authenticate': 'Bearer realm="petstore"' }
})
const INVALID_CREDENTIALS = new ApiError(401, 'unauthorized', 'The API key is invalid or revoked', {
  headers: { 'www-authenticate': 'Bearer realm="petstore", error="invalid_token"' }
})
const EXPIRED_CREDENTIALS = new ApiError(401, 'unauthorized', 'The API key expired', {
  headers: { 'www-authenticate': 'Bearer realm="petstore", error="invalid_token", error_description="The API key expired"' }
})

/** The 403 of a valid key without `scope` (RFC 6750 section 3.1). */
function insufficientScope (scope: Scope): ApiError {
  return new ApiError(403, 'insufficient_scope', `This operation needs the scope ${scope}, which the API key does not hold`, {
    headers: { 'www-authenticate': `Bearer realm="petstore", error="insufficient_scope", scope="${scope}"` }
  })
}

/**
 * Requires a valid API key on every route of the scope it is registered in, before anything else is
 * looked at: an unauthenticated request learns nothing, not even whether a path exists. Then admits
 * the request under the key's rate limit (when limiting is on; failures count against the client
 * address), and then requires the scope the route names: 401, then 403, before any answer the route
 * gives (400, 404, 413, 415...). A method no route serves has no scope: its 405 or 404 answers any valid
 * key, telling no more than the public OpenAPI document.
 */
export default fp<{ verifier: ApiKeyVerifier, rateLimiter: RateLimiter | undefined, clock: Clock }>(async (app, { verifier, rateLimiter, clock }) => {
  app.decorateRequest('apiKeyId', 0n)
  app.decorateRequest('apiKeyScopes', null)

  // Authenticated answers are for one client only: no shared cache may keep them.
  const markPrivate = (reply: FastifyReply) => reply.header('cache-control', 'no-store')

  // Keys not cached yet (or invalid ones) are looked up in the store; failures count against the address.
  const authenticate = async (request: FastifyRequest, reply: FastifyReply, token: string | undefined) => {
    const key = token === undefined ? undefined : await verifier.verify(token)
    if (key === undefined || key === EXPIRED) {
      await rateLimiter?.admitAnonymous(request, reply)
      throw token === undefined ? NO_CREDENTIALS : key === EXPIRED ? EXPIRED_CREDENTIALS : INVALID_CREDENTIALS
    }
    await admit(request, reply, key)
  }

  // The rate limit counts by key; in memory it answers at once, with Redis it may be a promise.
  const admit = (request: FastifyRequest, reply: FastifyReply, key: VerifiedKey): void | Promise<void> => {
    request.apiKeyId = key.id
    request.apiKeyScopes = key.scopes
    markPrivate(reply)
    if (key.expiresAt !== undefined && key.expiresAt - clock.now() < EXPIRATION_NOTICE_MS) reply.header('api-key-expiration', key.expiration)
    return rateLimiter?.admitKey(request, reply)
  }

  app.addHook('onRequest', (request, reply, done) => {
    const authorizations = request.headers.authorization === undefined ? 0 : countHeaderLines(request.raw.rawHeaders, 'authorization')
    if (authorizations > 1) {
      done(repeatedHeader('Authorization', authorizations))
      return
    }
    const token = bearerToken(request.headers.authorization)
    // The hot path, without a promise: a key verified in the last seconds, counted in memory.
    const key: KeyCheck = token === undefined ? undefined : verifier.verifyCached(token)
    let pending: void | Promise<void>
    try {
      pending = key === undefined || key === EXPIRED ? authenticate(request, reply, token) : admit(request, reply, key)
    } catch (error) {
      done(error as Error)
      return
    }
    if (pending === undefined) done()
    else pending.then(() => { done() }, done)
  })

  // Each route checks its own scope, in a hook of its own that runs after the one above: the scope is
  // known when the route is made, so a request costs one set lookup.
  app.addHook('onRoute', (route) => {
    const scope = route.config?.scope
    if (scope === undefined) throw new Error(`${String(route.method)} ${route.url} is behind an API key but names no scope`)
    const refusal = insufficientScope(scope)
    const requireScope: onRequestHookHandler = (request, _reply, done) => {
      // A path with a trailing slash, which a route with a parameter last takes, names no operation, so
      // it has no scope: it gets the error handler's 404 whatever the key's scopes.
      if (request.apiKeyScopes?.has(scope) === true || hasTrailingSlash(request.url)) done()
      else done(refusal)
    }
    route.onRequest = [...[route.onRequest ?? []].flat(), requireScope]
  })
}, { name: 'auth' })
