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
 * the request under the key's rate limit; failures count against the client address.
 */
export default fp<{ verifier: ApiKeyVerifier, rateLimiter: RateLimiter }>(async (app, { verifier, rateLimiter }) => {
  app.decorateRequest('apiKeyId', 0n)
  app.addHook('onRequest', async (request, reply) => {
    const token = BEARER.exec(request.headers.authorization ?? '')?.[1]
    const keyId = token === undefined ? undefined : await verifier.verify(token.trimEnd())
    if (keyId === undefined) {
      await rateLimiter.admitAnonymous(request, reply)
      throw token === undefined ? NO_CREDENTIALS : INVALID_CREDENTIALS
    }
    request.apiKeyId = keyId
    await rateLimiter.admitKey(request, reply)
    // Authenticated answers are for one client only: no shared cache may keep them.
    reply.header('cache-control', 'no-store')
  })
}, { name: 'auth' })
