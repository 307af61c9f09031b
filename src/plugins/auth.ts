import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ApiKeyVerifier } from '../api-keys/api-key.verifier.js'
import { ApiError } from '../errors.js'
import type { RateLimiter } from './rate-limit.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The id of the API key the request was made with. */
    apiKeyId: bigint
  }
}

// RFC 7235: the scheme name is case-insensitive, and one or more spaces precede the credentials.
const BEARER = /^Bearer +(.*)$/i

const NO_CREDENTIALS = new ApiError(401, 'unauthorized', 'An API key is required: send Authorization: Bearer <API_KEY>', {
  headers: { 'www-authenticate': 'Bearer realm="petstore"' }
})
const INVALID_CREDENTIALS = new ApiError(401, 'unauthorized', 'The API key is invalid or revoked', {
  headers: { 'www-authenticate': 'Bearer realm="petstore", error="invalid_token"' }
})

/**
 * Requires a valid API key on every route of the scope it is registered in, before anything else is
 * looked at: an unauthenticated request learns nothing, not even whether a path exists. Then admits
 * the request under the key's rate limit (when limiting is on); failures count against the client
 * address.
 */
export default fp<{ verifier: ApiKeyVerifier, rateLimiter: RateLimiter | undefined }>(async (app, { verifier, rateLimiter }) => {
  app.decorateRequest('apiKeyId', 0n)

  // Authenticated answers are for one client only: no shared cache may keep them.
  const markPrivate = (reply: FastifyReply) => reply.header('cache-control', 'no-store')

  // Keys not cached yet (or invalid ones) are looked up in the store; failures count against the address.
  const authenticate = async (request: FastifyRequest, reply: FastifyReply, token: string | undefined) => {
    const keyId = token === undefined ? undefined : await verifier.verify(token)
    if (keyId === undefined) {
      await rateLimiter?.admitAnonymous(request, reply)
      throw token === undefined ? NO_CREDENTIALS : INVALID_CREDENTIALS
    }
    await admit(request, reply, keyId)
  }

  // The rate limit counts by key; in memory it answers at once, with Redis it may be a promise.
  const admit = (request: FastifyRequest, reply: FastifyReply, keyId: bigint): void | Promise<void> => {
    request.apiKeyId = keyId
    markPrivate(reply)
    return rateLimiter?.admitKey(request, reply)
  }

  app.addHook('onRequest', (request, reply, done) => {
    const token = BEARER.exec(request.headers.authorization ?? '')?.[1]?.trimEnd()
    // The hot path, without a promise: a key verified in the last seconds, counted in memory.
    const keyId = token === undefined ? undefined : verifier.verifyCached(token)
    let pending: void | Promise<void>
    try {
      pending = keyId === undefined ? authenticate(request, reply, token) : admit(request, reply, keyId)
    } catch (error) {
      done(error as Error)
      return
    }
    if (pending === undefined) done()
    else pending.then(() => { done() }, done)
  })
}, { name: 'auth' })
