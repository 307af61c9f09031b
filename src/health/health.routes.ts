import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ApiError, errorResponses } from '../errors.js'
import type { Store } from '../store/store.js'

/** How long readiness waits for the store before it answers 503. */
const READINESS_DEADLINE_MS = 1000

const STORE_NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const
const OK = Type.Object({ status: Type.Literal('ok') })

/**
 * GET /healthz (liveness: the process answers; no dependency is asked, so an orchestrator does not
 * restart instances during a database outage) and GET /readyz (readiness: 200 while the store
 * answers a query within READINESS_DEADLINE_MS, 503 naming it while it does not). Open to all.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<{ store: Store }> = async (app, { store }) => {
  // Outside /v1, for load balancers and orchestrators: not part of the API's document.
  const schema = { hide: true, security: [], response: { 200: OK, ...errorResponses(503) } }

  // Served while load is shed: busy is not dead, and an instance restarted for it would leave its load to the others.
  app.get('/healthz', { schema, config: { servedUnderLoad: true } }, async () => ({ status: 'ok' as const }))

  app.get('/readyz', { schema }, async () => {
    const name = STORE_NAMES[store.dialect]
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${READINESS_DEADLINE_MS} ms`)), READINESS_DEADLINE_MS)
    })
    try {
      await Promise.race([store.ping(), deadline])
    } catch (error) {
      throw new ApiError(503, 'service_unavailable', `The store (${name}) is not answering`, { cause: error, headers: { 'retry-after': '1' } })
    } finally {
      clearTimeout(timer)
    }
    return { status: 'ok' as const }
  })
}
