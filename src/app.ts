import { randomUUID } from 'node:crypto'
import { compile as compileTrust } from '@fastify/proxy-addr'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ApiKeyVerifier, type ApiKeyVerifierOptions } from './api-keys/api-key.verifier.js'
import { apiSerializerCompiler } from './api-serializer.js'
import { apiValidatorCompiler } from './api-validator.js'
import type { Config } from './config.js'
import { findSetting } from './db/settings.repository.js'
import { scheduleDeletion, type DeletedCount } from './background-deletion.js'
import { categoryRoutes } from './categories/category.routes.js'
import { EventStreams } from './events/event-streams.js'
import { eventRoutes } from './events/event.routes.js'
import { pruneExpiredEvents } from './events/expired-event-prune.js'
import { healthRoutes } from './health/health.routes.js'
import { purgeExpiredKeys } from './idempotency/expired-key-purge.js'
import { IdempotentCreates } from './idempotency/idempotent-create.js'
import { boundLingeringClose } from './lingering-close.js'
import { createMetrics, type Metrics } from './metrics/metrics.js'
import { orderRoutes } from './orders/order.routes.js'
import { ORDER_STATUSES } from './orders/order.schemas.js'
import { createCursorCodec } from './pagination/cursor.js'
import { petRoutes } from './pets/pet.routes.js'
import { PET_STATUSES } from './pets/pet.schemas.js'
import apiDocs from './plugins/api-docs.js'
import auth from './plugins/auth.js'
import connectionLimit from './plugins/connection-limit.js'
import routeNotices from './plugins/route-notices.js'
import errorHandler, { answerClientError, answerNotFound, sendError } from './plugins/error-handler.js'
import expectContinue from './plugins/expect-continue.js'
import jsonBody from './plugins/json-body.js'
import loadShedding from './plugins/load-shedding.js'
import metricsPlugin, { answerRecorder, type RecordAnswer } from './plugins/metrics.js'
import openapi from './plugins/openapi.js'
import pipelinedRequests from './plugins/pipelined-requests.js'
import { createRateLimiter } from './plugins/rate-limit.js'
import requestHead from './plugins/request-head.js'
import securityHeaders from './plugins/security-headers.js'
import shutdown from './plugins/shutdown.js'
import writeCoalescing from './plugins/write-coalescing.js'
import { RequestLog, logsEachRequest } from './logger.js'
import { OutageLog } from './outage-log.js'
import { requestLoggerFactory } from './request-logger.js'
import { meteredPetStore } from './store/metered-pet-store.js'
import { findStoredResponse } from './store/stored-response.js'
import type { Store } from './store/store.js'
import { parseTrustedProxies } from './trusted-proxies.js'
import { formatValidationErrors } from './validation/validation-error-message.js'
import { pruneExpiredDeliveries } from './webhooks/expired-delivery-prune.js'
import { parseRetrySchedule } from './webhooks/retry-schedule.js'
import { WebhookDispatcher } from './webhooks/webhook-dispatcher.js'
import { WebhookMetrics } from './webhooks/webhook-metrics.js'
import { countOwedEvents, findOldestOwedPosition } from './webhooks/webhook-queue.js'
import { webhookRoutes } from './webhooks/webhook.routes.js'
import { systemNetwork, WebhookTransport, type WebhookNetwork } from './webhooks/webhook-transport.js'

/** The query of an operation that declares none: empty, or a 400 naming what it holds. */
const NO_QUERY_PARAMETERS = Type.Object({}, { additionalProperties: false })

/** The kind under which the webhook dispatcher's failures to reach the store are logged. */
export const DISPATCHER_OUTAGE = 'webhook delivery could not reach the store'
/** The kind under which the event streams' failures to read the store are logged. */
export const EVENT_STREAM_OUTAGE = 'an event stream failed'

/** Limits that are always on; the README's "Limits" table lists them. */
export const LIMITS = {
  bodyBytes: 16 * 1024,
  /**
   * The longest path parameter (an id): longer ones are a 414 before anything else, as a URL too long.
   * Fastify's default of 100 answered a 414 before the key was checked, to ids a 400 would describe.
   */
  pathParameterChars: 8 * 1024,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 5_000,
  idleTimeoutMs: 60_000,
  /**
   * Longer than the proxies and load balancers in front keep an idle connection to an instance
   * (nginx's upstream and AWS's load balancers: 60 s): closed first by the instance, a connection a
   * proxy was reusing at that moment lost its request (nginx: 502). Fastify's own default.
   */
  keepAliveTimeoutMs: 72_000,
  /** The longest a connection this side has closed waits for the client to close it too (see boundLingeringClose). */
  lingerMs: 2_000,
  /** Open connections per instance; more are refused by the socket layer. */
  maxConnections: 4096,
  /** Rate-limit counters kept in memory without Redis, of keys and, apart, of client addresses. */
  rateLimitCounters: 100_000,
  /** Past this event-loop delay the instance answers 503 at once instead of queueing more work. */
  maxEventLoopDelayMs: 1000,
  /** Event streams: how often the log is read for new events (so they arrive within a second of the commit, from any instance). */
  eventPollMs: 250,
  /** Event streams: the longest silence, filled with a comment line so that proxies keep the connection. */
  eventHeartbeatMs: 15_000,
  /** Event streams: how often each stream's key is checked again. */
  eventKeyCheckMs: 1000,
  /** Event streams: bytes waiting for a slow reader before its stream is reset. */
  eventStreamBufferBytes: 256 * 1024,
  /** Events: ids of the log one read walks at most, for a page of the feed or a stream's catch-up, the loop turning between reads. */
  eventReadStepIds: 10_000,
  /** Webhooks: how often the store is asked for subscriptions with events due. */
  webhookPollMs: 200,
  /** Webhooks: deliveries in flight at once per instance (one at most per subscription). */
  webhookConcurrency: 16,
  /** Webhooks: the longest wait for a receiver's answer. */
  webhookTimeoutMs: 10_000,
  /** Webhooks: how long a subscription stays with an instance that stopped without releasing it (a crash): an attempt's timeout and 5 s. */
  webhookLeaseMs: 15_000,
  /** Webhooks: subscriptions there may be, so that one key cannot multiply every event's deliveries without end. */
  maxWebhooks: 100,
  /** Webhooks: retries asked for (POST …/retry) and not yet made, per subscription. */
  maxQueuedRetries: 100,
  /** How often each instance deletes what has passed its retention: idempotency keys, events, webhook deliveries. */
  expiredRowsDeletionMs: 60_000
}

export type Limits = typeof LIMITS

export interface AppOptions {
  config: Config
  /** An open, migrated store; the caller closes it after the app. */
  store: Store
  /** Where the app logs (see createLogger); nothing is logged without one. */
  logger?: FastifyBaseLogger
  verifierOptions?: ApiKeyVerifierOptions
  /** Tests shorten limits so as not to wait for them; the service runs with LIMITS. */
  limits?: Partial<Limits>
  /** Where request and store metrics are counted; the server shows them when METRICS_PORT is set. */
  metrics?: Metrics
  /** How often the failures of an outage are counted in the log (OUTAGE_REPORT_INTERVAL_MS); tests shorten it. */
  outageReportMs?: number
  /** How webhook receivers are resolved and dialled; tests replace it to stay on this machine. */
  webhookNetwork?: WebhookNetwork
}

/** Builds the whole HTTP application on an open, migrated store; it does not listen. */
export async function buildApp ({ config, store, logger, verifierOptions, limits: shortened, metrics = createMetrics(), outageReportMs, webhookNetwork = systemNetwork }: AppOptions): Promise<FastifyInstance> {
  const { clock } = store
  const limits = { ...LIMITS, ...shortened }
  const trustedProxies = config.TRUST_PROXY === undefined ? undefined : parseTrustedProxies(config.TRUST_PROXY)
  const countUnread = (status: number) => { metrics.unread.inc({ status: String(status) }) }
  const recordAnswer = answerRecorder(metrics)
  const requestLog = new RequestLog(logsEachRequest(config.LOG_REQUESTS))
  /** Counts and logs an answer that Fastify's hooks and its log never see: a router's refusal, a stream its client left. */
  const recordUnseenAnswer: RecordAnswer = (request, reply) => {
    recordAnswer(request, reply)
    requestLog.requestCompleted(null, request, reply)
  }
  const app = Fastify({
    // From a trusted proxy, request.ip is the client's address from X-Forwarded-For; from anyone else, the socket's.
    trustProxy: trustedProxies ?? false,
    ...(logger === undefined ? { logger: false } : { loggerInstance: logger, childLoggerFactory: requestLoggerFactory }),
    logController: requestLog,
    genReqId: () => randomUUID(),
    bodyLimit: limits.bodyBytes,
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node enforces the header and request timeouts on a sweep every 30 s by default: check each
    // second, or more often for a shorter timeout.
    // A request without Host is answered by the request-head plugin, in the Error shape.
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs / 4), requireHostHeader: false },
    routerOptions: { maxParamLength: limits.pathParameterChars },
    schemaErrorFormatter: formatValidationErrors,
    frameworkErrors: (error, request, reply) => {
      // A refusal of the router's, counted under `unmatched` once written. Fastify keeps no start time
      // for it: answered as the path is read, it is timed as 0.
      reply.raw.once('finish', () => { recordUnseenAnswer(request, reply) })
      sendError(error, request, reply)
    },
    clientErrorHandler: (error, socket) => { answerClientError(error, socket, countUnread) },
    // The shutdown plugin answers in the Error shape instead.
    return503OnClosing: false
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.server.maxConnections = limits.maxConnections
  boundLingeringClose(app.server, limits.lingerMs)
  // Every header line is read, within the 16 KiB a request's headers may take: past Node's default
  // of 1,000 lines the rest were dropped unseen, a second Authorization or Host line among them.
  app.server.maxHeadersCount = 0
  const trusted = trustedProxies === undefined ? () => false : compileTrust(trustedProxies)
  await app.register(connectionLimit, { perAddress: config.CONNECTIONS_PER_ADDRESS, trusted: (address) => trusted(address, 0) })
  app.setValidatorCompiler(apiValidatorCompiler)
  app.setSerializerCompiler(apiSerializerCompiler)
  await app.register(errorHandler, { outageReportMs, countUnread })
  await app.register(expectContinue)
  await app.register(shutdown)
  // Before any hook that may refuse a request: the requests pipelined after it wait for its answer.
  await app.register(pipelinedRequests)
  await app.register(requestHead)
  await app.register(metricsPlugin, { recordAnswer })
  await app.register(loadShedding, { maxEventLoopDelayMs: limits.maxEventLoopDelayMs })
  await app.register(securityHeaders)
  await app.register(writeCoalescing)
  await app.register(jsonBody)
  await app.register(openapi, { config, clock })
  await app.register(apiDocs, { publicBaseUrl: config.PUBLIC_BASE_URL })
  await app.register(routeNotices, { clock })
  await app.register(healthRoutes, { store })

  const { db } = store
  const verifier = new ApiKeyVerifier(db, clock, verifierOptions)
  // Closing goes on without them: a shutdown during a store outage must still close the store and exit.
  app.addHook('onClose', async () => {
    await verifier.close().catch((err: unknown) => { app.log.warn({ err }, 'the API keys\' last-used times of the last seconds could not be written: they are lost') })
  })
  for (const [kind, what, deletion] of [
    ['idempotency_keys', 'expired idempotency keys', (counted: DeletedCount) => purgeExpiredKeys(db, clock, counted)],
    ['events', 'expired events', async (counted: DeletedCount) => await pruneExpiredEvents(db, clock, config.EVENT_RETENTION_DAYS, await findOldestOwedPosition(db), counted)],
    ['webhook_deliveries', 'expired webhook deliveries', (counted: DeletedCount) => pruneExpiredDeliveries(db, clock, config.EVENT_RETENTION_DAYS, counted)]
  ] as const) {
    // Counted batch by batch: a run that fails part way (an outage) has deleted its first batches.
    // Each kind's series is there from the start, at 0, as a run that finds nothing expired counts nothing.
    metrics.expiredRowsDeleted.inc({ kind }, 0)
    const counted = () => deletion((count) => { metrics.expiredRowsDeleted.inc({ kind }, count) })
    const scheduled = scheduleDeletion(counted, limits.expiredRowsDeletionMs, (err) => app.log.warn({ err }, `deleting ${what} failed; it is tried again`))
    app.addHook('onClose', async () => { await scheduled.stop() })
  }
  const cursorSecret = await findSetting(db, 'cursor_secret')
  const installationId = await findSetting(db, 'installation_id')
  const rateLimiter = await createRateLimiter(app, {
    perMinute: config.RATE_LIMIT_PER_MINUTE,
    maxCounters: limits.rateLimitCounters,
    redisUrl: config.REDIS_URL,
    redisTimeoutMs: config.REDIS_TIMEOUT_MS,
    namespace: installationId,
    clock
  })
  const apiUrl = (path: string) => `${config.PUBLIC_BASE_URL ?? ''}/v1${path}`
  const allowPrivateWebhooks = config.WEBHOOK_ALLOW_PRIVATE === 'true'
  const dispatcherOutages = new OutageLog(app.log, `deliveries wait, and the store is tried again every ${limits.webhookPollMs / 1000} s`, outageReportMs)
  const dispatcher = new WebhookDispatcher(db, clock, new WebhookTransport(webhookNetwork, { allowPrivate: allowPrivateWebhooks, timeoutMs: limits.webhookTimeoutMs }), {
    pollMs: limits.webhookPollMs,
    concurrency: limits.webhookConcurrency,
    leaseMs: limits.webhookLeaseMs,
    retrySchedule: parseRetrySchedule(config.WEBHOOK_RETRY_SCHEDULE),
    installationId
  }, new WebhookMetrics(metrics.registry, () => countOwedEvents(db)), (err) => {
    // Failed at every poll while the store is down: logged as an outage, not as a stack a poll.
    dispatcherOutages.failed(DISPATCHER_OUTAGE, err)
  })
  app.addHook('onClose', async () => { dispatcherOutages.close() })
  dispatcher.start()
  app.addHook('preClose', async () => { await dispatcher.stop() })
  const pets = meteredPetStore(store.pets, metrics.store)

  await app.register(async (v1) => {
    await v1.register(auth, { verifier, rateLimiter, clock })
    // An operation takes no query parameter it does not declare, as the lists refuse theirs: one
    // ignored would be a request not done as asked (`POST /v1/pets?dry_run=true` created).
    v1.addHook('onRoute', (route) => {
      if (route.schema?.querystring === undefined) route.schema = { ...route.schema, querystring: NO_QUERY_PARAMETERS }
    })
    // Every change records its events: this instance's webhooks send them at once.
    const committed = () => { dispatcher.wake() }
    // Unknown paths under /v1 answer only after authentication.
    v1.setNotFoundHandler(answerNotFound)
    const idempotentCreates = new IdempotentCreates(clock, async (apiKeyId, key, notBefore) => await findStoredResponse(db, apiKeyId, key, notBefore))
    await v1.register(petRoutes, { pets, cursorCodec: createCursorCodec(cursorSecret, 'pets', PET_STATUSES), idempotentCreates, committed, apiUrl })
    await v1.register(categoryRoutes, { db, clock, cursorCodec: createCursorCodec(cursorSecret, 'categories', []), idempotentCreates, committed, apiUrl })
    const streamOutages = new OutageLog(app.log, 'streams that caught up wait for the store, others end and their clients may reconnect', outageReportMs)
    v1.addHook('onClose', async () => { streamOutages.close() })
    const streams = new EventStreams(db, verifier, {
      pollMs: limits.eventPollMs,
      heartbeatMs: limits.eventHeartbeatMs,
      keyCheckMs: limits.eventKeyCheckMs,
      maxBufferedBytes: limits.eventStreamBufferBytes,
      readStepIds: limits.eventReadStepIds,
      maxPerKey: config.MAX_STREAMS_PER_KEY
    }, (err) => {
      // Failed at every poll while the store is down, and again at each of its returns in an outage that comes and goes.
      streamOutages.failed(EVENT_STREAM_OUTAGE, err)
    })
    // Streams never end by themselves: they are closed, not waited for.
    v1.addHook('preClose', (done) => {
      streams.closeAll()
      done()
    })
    await v1.register(eventRoutes, { db, streams, retentionDays: config.EVENT_RETENTION_DAYS, readStepIds: limits.eventReadStepIds, apiUrl, recordAnswer: recordUnseenAnswer })
    await v1.register(webhookRoutes, {
      db,
      clock,
      webhooksCursor: createCursorCodec(cursorSecret, 'webhooks', []),
      deliveriesCursor: (webhookId) => createCursorCodec(cursorSecret, `webhook-deliveries ${webhookId}`, []),
      idempotentCreates,
      network: webhookNetwork,
      allowPrivate: allowPrivateWebhooks,
      maxWebhooks: limits.maxWebhooks,
      maxQueuedRetries: limits.maxQueuedRetries,
      apiUrl
    })
    await v1.register(orderRoutes, { db, clock, cursorCodec: createCursorCodec(cursorSecret, 'orders', ORDER_STATUSES), idempotentCreates, committed, apiUrl })
  }, { prefix: '/v1' })

  return app
}
