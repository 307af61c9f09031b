import cluster from 'node:cluster'
import { once } from 'node:events'
import type { Server } from 'node:http'
import { resolve } from 'node:path'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { defaultExpiry } from './api-keys/duration.js'
import { countApiKeys } from './api-keys/api-key.repository.js'
import { createFirstApiKey } from './api-keys/first-api-key.js'
import { FAULT_SIGNALS, holdStopSignals, onStopSignals, resend, STOP_SIGNALS } from './held-stop-signals.js'
import { buildApp, LIMITS } from './app.js'
import { commandName } from './cli/command-name.js'
import { stoppedClock } from './clock.js'
import { ConfigError, type Config } from './config.js'
import { migrateToLatest, newerMigrationsMessage } from './db/migrate.js'
import type { Logger } from 'pino'
import { createLogger } from './logger.js'
import { collectProcessMetrics, createMetrics, createMetricsServer, reportToPrimary } from './metrics/metrics.js'
import { openFileLimit } from './open-file-limit.js'
import { logProcessWarnings } from './process-warnings.js'
import { openStore, storeOptionsFrom } from './store/open-store.js'
import { refuseUnusableListenSetting } from './store/postgres/change-feed.js'
import type { Store } from './store/store.js'
import { VERSION } from './version.js'
import { STOP_WORKER, superviseWorkers } from './workers.js'

/**
 * Runs the service until SIGTERM or SIGINT, then finishes in-flight requests, closes the store and
 * exits 0. With WEB_CONCURRENCY above 1 this process prepares the store and runs that many workers
 * (see superviseWorkers), each of which comes back here.
 */
export async function serve (config: Config): Promise<void> {
  const logger = createLogger(config.LOG_LEVEL, config.LOG_FORMAT)
  logProcessWarnings(logger)
  const worker = cluster.isWorker
  // A worker stops when the primary process tells it (STOP_WORKER), not on a signal: Ctrl-C in a
  // terminal, and SIGTERM from systemd (KillMode=control-group), reach every process of the group, and
  // the primary's stop would come as a second one, on which a worker would exit at once, dropping the
  // requests it is finishing. Any other process holds a signal until its shutdown can run.
  if (worker) for (const signal of STOP_SIGNALS) process.on(signal, () => {})
  const exitOnSecond = (signal: NodeJS.Signals) => {
    logger.error({ signal }, `second ${signal} while starting: exiting at once`)
    process.exit(1)
  }
  // Said at once: the start may take a while yet (a migration waiting for another instance's).
  const onHeld = (signal: NodeJS.Signals) => { logger.info({ signal }, `${signal} while starting: the service stops once its store is ready, without taking its port`) }
  const held = worker ? undefined : holdStopSignals(onHeld, exitOnSecond)
  if (config.WEB_CONCURRENCY > 1 && config.DATABASE_URL === 'sqlite::memory:') {
    throw new ConfigError(`Invalid configuration: WEB_CONCURRENCY is ${config.WEB_CONCURRENCY}, and DATABASE_URL is sqlite::memory:, one process's own store; ` +
      'workers need a store they share: use sqlite:PATH or postgres://..., or WEB_CONCURRENCY=1')
  }
  if (!worker) {
    logger.info({ version: VERSION }, `starting petstore ${VERSION}`)
    warnOfFewFileDescriptors(logger)
    if (config.RATE_LIMIT_PER_MINUTE === 0) logger.warn('RATE_LIMIT_PER_MINUTE is 0: no request is rate-limited, by key or by client address')
  }
  if (config.WEB_CONCURRENCY > 1 && !worker) {
    const store = openStore(config.DATABASE_URL, { ...storeOptionsFrom(config), log: logger })
    try {
      await prepareStore(store, config, logger)
    } finally {
      await store.close()
    }
    await superviseWorkers(config, logger, { graceMs: config.SHUTDOWN_GRACE_MS, listenMetrics: async (server) => { await listenMetrics(server, config, logger) }, heldSignals: held! })
    return
  }

  // Listened for from the start: the primary may ask a worker that is still starting, with no request to finish yet.
  let stopWhenAsked = (): void => { process.exit(0) }
  if (worker) process.on('message', (message) => { if (message === STOP_WORKER) stopWhenAsked() })
  const metrics = createMetrics()
  if (config.METRICS_PORT !== undefined) {
    collectProcessMetrics(metrics)
    if (worker) reportToPrimary(metrics)
  }
  const store = openStore(config.DATABASE_URL, { ...storeOptionsFrom(config), log: logger })
  let app: FastifyInstance
  try {
    if (!worker) await prepareStore(store, config, logger)
    app = await buildApp({ config, store, logger, metrics })
  } catch (error) {
    await store.close() // its connections, its threads, and a sqlite::memory: store's folder
    // A worker's stderr line ("petstore: ...") names no process, and the primary's log line no cause.
    if (worker) logger.error({ err: error }, 'this worker could not start')
    throw error
  }
  const metricsServer = config.METRICS_PORT === undefined || worker ? undefined : createMetricsServer(metrics.registry)

  // Why the process exits 1 goes to the log, where the collector of its lines reads it (the library's own is stderr).
  const exitOnSecondSignal = (signal: NodeJS.Signals) => {
    logger.error({ signal }, `second ${signal}: exiting at once, without the requests in flight`)
    process.exit(1)
  }
  // The stop signals are taken below (onStopSignals), which knows a copy of the first from a second.
  let stoppedBy: NodeJS.Signals | undefined
  let closing = false
  const shutdown = closeWithGrace({
    delay: config.SHUTDOWN_GRACE_MS,
    skip: [...STOP_SIGNALS, ...FAULT_SIGNALS],
    logger,
    onSecondSignal: exitOnSecondSignal,
    onTimeout: (delay) => { logger.error({ graceMs: delay }, `shutdown not finished within ${delay / 1000} s (requests in flight, or the store closing): exiting without it`) }
  }, async ({ signal, err }) => {
    closing = true
    if (err !== undefined) app.log.error({ err }, 'shutting down after an unexpected error')
    else app.log.info({ signal: signal ?? stoppedBy }, signal === undefined && stoppedBy === undefined ? 'shutting down: the primary process asked' : 'shutting down')
    metricsServer?.close()
    try {
      await app.close()
    } finally {
      await store.close() // whatever else failed to close: its commits, its writer thread, its connections
    }
  })
  const heldSignal = held?.release()
  if (!worker) {
    onStopSignals((signal) => {
      if (closing) return exitOnSecondSignal(signal) // shutting down already, after an error
      stoppedBy = signal
      void shutdown.close()
    }, exitOnSecondSignal)
  }

  try {
    // A stop asked while starting is acted on without taking the ports: a load balancer would send
    // clients to an instance that is stopping. Metrics first: a METRICS_PORT or METRICS_HOST that
    // cannot be listened on then stops the service before the API takes a connection it would drop.
    if (heldSignal === undefined) {
      if (metricsServer !== undefined) await listenMetrics(metricsServer, config, logger)
      await app.listen({ port: config.PORT, host: config.HOST }).catch((error: unknown) => { throw listenError(error, 'PORT', config.PORT, 'HOST', config.HOST) })
    }
    stopWhenAsked = () => { void shutdown.close() }
    resend(heldSignal)
  } catch (error) {
    metricsServer?.close()
    await app.close()
    await store.close()
    throw error
  }
}

/**
 * Checks that the server takes DATABASE_DIRECT_URL, applies the migrations and, on an empty store,
 * makes and prints the first key: once per start, whatever the number of workers. Only on a terminal:
 * an output that is not one (systemd, a container) goes to a log collector, which would keep the key;
 * there the log says how to make one.
 */
async function prepareStore (store: Store, config: Config, logger: Logger): Promise<void> {
  if (config.DATABASE_DIRECT_URL !== undefined) await refuseUnusableListenSetting(config.DATABASE_DIRECT_URL, config.DATABASE_CONNECT_TIMEOUT_MS)
  const { applied, newer } = await migrateToLatest(store.db)
  if (applied.length > 0) logger.info({ migrations: applied }, `applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to the store`)
  if (newer.length > 0) logger.warn({ migrations: newer }, newerMigrationsMessage(newer))
  if (process.stdout.isTTY !== true) {
    if (config.DATABASE_URL === 'sqlite::memory:') {
      // No command reaches this process's own store (they refuse it): the advice below would lead nowhere.
      logger.warn('this store has no API key, and none can be made for it: sqlite::memory: is this process\'s own, and its first key ' +
        'is made only where the output is a terminal, which this is not: every /v1 request will be refused; run the service in a terminal, ' +
        'or use a store commands can reach (sqlite:PATH) and make a key with keys create')
    } else if (await countApiKeys(store.db) === 0) {
      // The command's whole path, which works from any folder: a service (systemd's) seldom runs where its operator is.
      logger.warn(`this store has no API key: make one with \`${resolve(process.argv[1] ?? 'petstore')} keys create --name NAME\`, run with this service's settings (its DATABASE_URL) ` +
        '(none is made here, as it would be on a terminal: this output is not one, and a log would keep the key)')
    }
    return
  }
  const now = store.clock.now()
  const expiresAt = defaultExpiry(config.API_KEY_DEFAULT_TTL, now)
  const firstKey = await createFirstApiKey(store.db, { expiresAt, clock: stoppedClock(now) })
  // Shown before listening: the key exists from here on, whether or not the port can be taken.
  // PORT=0 has the system choose the port once the API listens: the log's "Server listening" line names it.
  if (firstKey !== undefined) printFirstKey(firstKey, expiresAt, config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT === 0 ? '<port>' : config.PORT}`)
}

// Besides its connections, a process holds the store's files, its threads' and its logs'.
const OTHER_FILES = 256

/** Warns, at start, of an open-file limit too low for the connections an instance may hold: past it, new ones are closed at once. */
function warnOfFewFileDescriptors (logger: Logger): void {
  const limit = openFileLimit()
  const needed = LIMITS.maxConnections + OTHER_FILES
  if (limit !== undefined && limit < needed) {
    logger.warn(`the open-file limit (${limit}) is below the ${LIMITS.maxConnections} connections an instance may hold and its other files: ` +
      `past it, new connections are closed at once; raise it to ${needed} or more (ulimit -n, systemd's LimitNOFILE)`)
  }
}

async function listenMetrics (server: Server, config: Config, logger: Logger): Promise<void> {
  server.listen(config.METRICS_PORT, config.METRICS_HOST)
  await once(server, 'listening').catch((error: unknown) => { throw listenError(error, 'METRICS_PORT', config.METRICS_PORT, 'METRICS_HOST', config.METRICS_HOST) })
  logger.info({ address: server.address() }, 'metrics served at /metrics')
}

/** An address that cannot be listened on, as a configuration error naming the setting to change. */
function listenError (error: unknown, portSetting: string, port: unknown, hostSetting: string, host: string): unknown {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return new ConfigError(`Cannot listen: port ${String(port)} on ${host} is in use by another process; set ${portSetting} to a free port, or stop that process`, { cause: error })
    case 'EACCES':
      return new ConfigError(`Cannot listen: port ${String(port)} needs privileges on this system; set ${portSetting} to 1024 or more`, { cause: error })
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EINVAL': // an IPv6 link-local address without its zone (fe80::1)
      return new ConfigError(`Cannot listen: ${host} is not an address of this machine; set ${hostSetting} to one, such as 127.0.0.1 or 0.0.0.0`, { cause: error })
    default:
      return error
  }
}

// Shown once, on the first start of an empty store, as Elasticsearch shows its first password.
function printFirstKey (key: string, expiresAt: Date | undefined, baseUrl: string): void {
  process.stdout.write([
    '',
    '━━ First start: an API key was created. It is shown only this once; keep it safe. ━━',
    '',
    key,
    '',
    ...expiresAt === undefined ? [] : [`It expires at ${expiresAt.toISOString()} (API_KEY_DEFAULT_TTL).`, ''],
    `Call the API with:  curl -H "Authorization: Bearer <key>" ${baseUrl}/v1/pets`,
    `Make more keys with:  ${commandName()} keys create --name NAME   (list: keys list, revoke: keys revoke ID)`,
    '',
    ''
  ].join('\n'))
}
