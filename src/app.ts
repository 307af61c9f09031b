import { randomUUID } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { ApiKeyVerifier, type ApiKeyVerifierOptions } from './api-keys/api-key.verifier.js'
import { apiValidatorCompiler } from './api-validator.js'
import type { Config } from './config.js'
import type { Db } from './db/database.js'
import { StoreReadCache } from './db/read-cache.js'
import { AUTOCHECKPOINT_SAFETY_NET_PAGES, WalCheckpointer } from './db/wal-checkpointer.js'
import { findSetting } from './db/settings.repository.js'
import { healthRoutes } from './health/health.routes.js'
import type { Metrics } from './metrics/metrics.js'
import { IdempotentCreates } from './idempotency/idempotent-create.js'
import { createCursorCodec } from './pagination/cursor.js'
import { PetInsertQueue } from './pets/pet-insert-queue.js'
import { PetWriterThread } from './pets/pet-writer-thread.js'
import { orderRoutes } from './orders/order.routes.js'
import { ORDER_STATUSES } from './orders/order.schemas.js'
import { petRoutes } from './pets/pet.routes.js'
import { PET_STATUSES } from './pets/pet.schemas.js'
import apiDocs from './plugins/api-docs.js'
import auth from './plugins/auth.js'
import deprecation from './plugins/deprecation.js'
import errorHandler, { answerClientError, answerNotFound, sendError } from './plugins/error-handler.js'
import jsonBody from './plugins/json-body.js'
import loadShedding from './plugins/load-shedding.js'
import metricsPlugin from './plugins/metrics.js'
import openapi from './plugins/openapi.js'
import { createRateLimiter } from './plugins/rate-limit.js'
import securityHeaders from './plugins/security-headers.js'
import { RequestLogAtDebug } from './logger.js'
import { formatValidationErrors } from './validation/validation-error-message.js'

/** Limits that are always on; the README's "Limits" table lists them. */
export const LIMITS = {
  bodyBytes: 16 * 1024,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  /** Open connections per instance; more are refused by the socket layer. */
  maxConnections: 4096
}

export interface AppOptions {
  config: Config
  db: Db
  logger?: FastifyServerOptions['logger']
  verifierOptions?: ApiKeyVerifierOptions
  /** Request metrics to record, when METRICS_PORT is set. */
  metrics?: Metrics
}

/** Builds the whole HTTP application on an open, migrated store; it does not listen. */
export async function buildApp ({ config, db, logger = false, verifierOptions, metrics }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger,
    logController: new RequestLogAtDebug(),
    genReqId: () => randomUUID(),
    bodyLimit: LIMITS.bodyBytes,
    requestTimeout: LIMITS.requestTimeoutMs,
    connectionTimeout: LIMITS.idleTimeoutMs,
    keepAliveTimeout: LIMITS.keepAliveTimeoutMs,
    // Node enforces the header and request timeouts on a sweep every 30 s by default: check each second.
    http: { headersTimeout: LIMITS.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors: sendError,
    clientErrorHandler: answerClientError
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.server.maxConnections = LIMITS.maxConnections
  app.setValidatorCompiler(apiValidatorCompiler)
  await app.register(errorHandler)
  if (metrics !== undefined) await app.register(metricsPlugin, { metrics })
  await app.register(loadShedding)
  await app.register(securityHeaders)
  await app.register(jsonBody)
  await app.register(openapi, { config })
  await app.register(apiDocs)
  await app.register(deprecation)
  await app.register(healthRoutes, { db })

  const verifier = new ApiKeyVerifier(db, verifierOptions)
  app.addHook('onClose', async () => { await verifier.close() })
  const cursorSecret = await findSetting(db, 'cursor_secret')
  const rateLimiter = await createRateLimiter(app, {
    perMinute: config.RATE_LIMIT_PER_MINUTE,
    redisUrl: config.REDIS_URL,
    namespace: await findSetting(db, 'installation_id')
  })
  const apiUrl = (path: string) => `${config.PUBLIC_BASE_URL ?? ''}/v1${path}`
  const checkpointer = await WalCheckpointer.start(db, {
    onCheckpointError: (err) => app.log.warn({ err }, 'a WAL checkpoint failed; it is tried again'),
    onFailure: (err) => app.log.error({ err }, 'the WAL checkpoint thread failed: commits checkpoint the store again')
  })
  if (checkpointer !== undefined) app.addHook('onClose', async () => { await checkpointer.close() })
  // Under strict durability, creates commit on a thread of their own so the event loop need not wait
  // for each fsync (see PetWriterThread).
  const petWriter = config.DURABILITY !== 'strict' ? undefined : PetWriterThread.start(
    db,
    { durability: config.DURABILITY, autocheckpointPages: checkpointer && AUTOCHECKPOINT_SAFETY_NET_PAGES },
    (err) => app.log.error({ err }, 'the pet writer thread failed: pets are now committed on the main thread')
  )
  if (petWriter !== undefined) app.addHook('onClose', async () => { await petWriter.close() })

  await app.register(async (v1) => {
    await v1.register(auth, { verifier, rateLimiter })
    // Unknown paths under /v1 answer only after authentication.
    v1.setNotFoundHandler(answerNotFound)
    await v1.register(petRoutes, {
      db,
      cursorCodec: createCursorCodec(cursorSecret, 'pets', PET_STATUSES),
      idempotentCreates: new IdempotentCreates(db),
      insertQueue: new PetInsertQueue(db, petWriter),
      readCache: new StoreReadCache(db),
      apiUrl
    })
    await v1.register(orderRoutes, { db, cursorCodec: createCursorCodec(cursorSecret, 'orders', ORDER_STATUSES), apiUrl })
  }, { prefix: '/v1' })

  return app
}
