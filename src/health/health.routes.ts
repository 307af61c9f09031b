import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ApiError, errorResponses } from '../errors.js'
import type { Store } from '../store/store.js'

/** GET /healthz, open to all: 200 while the store answers a query, 503 while it does not. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ store: Store }> = async (app, { store }) => {
  app.get('/healthz', {
    schema: {
      // Outside /v1, for load balancers and orchestrators: not part of the API's document.
      hide: true,
      security: [],
      response: { 200: Type.Object({ status: Type.Literal('ok') }), ...errorResponses(503) }
    }
  }, async () => {
    try {
      await store.ping()
    } catch (error) {
      throw new ApiError(503, 'service_unavailable', 'The store is not answering', { cause: error, headers: { 'retry-after': '1' } })
    }
    return { status: 'ok' as const }
  })
}
