import cluster, { type Worker } from 'node:cluster'
import { once } from 'node:events'
import type { Server } from 'node:http'
import { availableParallelism } from 'node:os'
import type { Logger } from 'pino'
import type { Config } from './config.js'
import { onStopSignals, resend, type HeldStopSignals } from './held-stop-signals.js'
import { ClusterMetrics } from './metrics/cluster-metrics.js'
import { createMetricsServer } from './metrics/metrics.js'

/** What the primary process sends a worker to have it finish its requests and exit. */
export const STOP_WORKER = 'petstore:stop'

/** A worker that dies after it started serving is started again after this. */
const RESTART_DELAY_MS = 1000
/** A worker that fails to start once another has served (a database down, say) is started again after a wait that doubles up to this. */
const MAX_RESTART_DELAY_MS = 30_000

export interface WorkerSupervision {
  /** How long a worker may take to finish its requests on SIGTERM before it is killed. */
  graceMs: number
  /** Opens the metrics listener on METRICS_PORT (the caller's, so that its errors read the same). */
  listenMetrics: (server: Server) => Promise<void>
  /** A stop signal that came while the store was prepared: acted on once this process's own handlers are in place. */
  heldSignals: HeldStopSignals
}

/**
 * `WEB_CONCURRENCY=N`: runs N worker processes that serve the API on the one port (node:cluster hands
 * each new connection to the next worker in turn), after the caller has prepared the store once. This
 * process serves the workers' metrics, summed (see ClusterMetrics), on METRICS_PORT; starts a worker
 * again when one dies after it started serving, or fails to start once the service has served (its
 * store unreachable, say: the others answer 503 meanwhile), waiting longer each time it fails; when
 * the first worker fails to start (a port in use, say), which would fail again, stops with its exit
 * code; and on SIGTERM or SIGINT has every worker finish its requests (a message it sends each:
 * the workers take no signal for it), then exits.
 */
export async function superviseWorkers (config: Config, logger: Logger, { graceMs, listenMetrics, heldSignals }: WorkerSupervision): Promise<void> {
  // The workers' metrics come over their channel: as JSON, its default, a gauge's NaN (the webhook
  // queue's depth in a store outage) arrived as null, which the primary's `max` made 0.
  cluster.setupPrimary({ serialization: 'advanced' })
  const serving = new Set<Worker>()
  const clusterMetrics = new ClusterMetrics()
  const metricsServer = config.METRICS_PORT === undefined ? undefined : createMetricsServer({ metrics: async () => await clusterMetrics.metrics(serving), contentType: clusterMetrics.contentType })
  if (metricsServer !== undefined) await listenMetrics(metricsServer)

  let stopping = false
  const stop = async (exitCode: number) => {
    stopping = true
    const workers = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined)
    // Whether each worker finished: exit 0 (one that stops at its grace exits 1, as one process does).
    const finished = Promise.all(workers.map(async (worker) => {
      if (worker.process.exitCode !== null || worker.process.signalCode !== null) return true
      const [code] = await once(worker, 'exit') as [number | null]
      return code === 0
    }))
    // A worker whose channel is gone is exiting anyway (node:cluster ends a worker that loses it). One
    // still starting is told once it listens: a message sent before it listens for them was lost,
    // and it went on to serve until it was killed.
    const tell = (worker: Worker) => { if (worker.isConnected()) worker.send(STOP_WORKER, () => {}) }
    for (const worker of workers) if (serving.has(worker)) tell(worker); else worker.once('listening', () => { tell(worker) })
    // A second past their grace, in which each worker, stopping at its grace, logs it and exits:
    // only one that cannot (frozen, stuck in a synchronous loop) is still there.
    const killer = setTimeout(() => {
      logger.error({ graceMs, killedAfterMs: graceMs + 1000 }, `workers not finished within ${(graceMs + 1000) / 1000} s (SHUTDOWN_GRACE_MS and a second) are killed`)
      for (const worker of workers) worker.process.kill('SIGKILL')
    }, graceMs + 1000)
    const allFinished = (await finished).every(Boolean)
    clearTimeout(killer)
    metricsServer?.close()
    process.exit(exitCode === 0 && !allFinished ? 1 : exitCode)
  }
  let served = false
  let restartDelayMs = RESTART_DELAY_MS
  // A worker that died just before a stop was started again while the others finished: it served (a
  // load balancer sent it clients) until the primary's exit ended it, its requests dropped.
  const forkLater = (delayMs: number) => setTimeout(() => { if (!stopping) fork() }, delayMs)
  const fork = (): Worker => {
    const worker = cluster.fork()
    worker.once('listening', () => {
      serving.add(worker)
      served = true
      restartDelayMs = RESTART_DELAY_MS
    })
    worker.once('exit', (code, signal) => {
      clusterMetrics.retire(worker)
      if (stopping) return
      const workerPid = worker.process.pid
      if (serving.delete(worker)) {
        logger.error({ workerPid, code, signal }, 'a worker died: another is started')
        forkLater(RESTART_DELAY_MS)
      } else if (served) {
        // Not a setting that can never work (the service served with it): a dependency that is down.
        logger.error({ workerPid, code, signal }, `a worker failed to start: another is started in ${restartDelayMs / 1000} s`)
        forkLater(restartDelayMs)
        restartDelayMs = Math.min(restartDelayMs * 2, MAX_RESTART_DELAY_MS)
      } else {
        void stop(code ?? 1)
      }
    })
    return worker
  }
  const killWorkers = (signal: NodeJS.Signals) => {
    // A second signal, as in one process (close-with-grace): stop now.
    logger.error({ signal }, `second ${signal}: the workers are killed`)
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL')
    process.exit(1)
  }
  onStopSignals((signal) => {
    if (stopping) killWorkers(signal)
    logger.info({ signal }, 'shutting down: each worker finishes its requests')
    void stop(0)
  }, killWorkers)
  const heldSignal = heldSignals.release()
  // Asked to stop while the store was prepared: no worker is started, which would take the port.
  if (heldSignal !== undefined) return resend(heldSignal)
  const cores = availableParallelism()
  if (config.WEB_CONCURRENCY > cores) {
    logger.warn({ workers: config.WEB_CONCURRENCY, cores }, `WEB_CONCURRENCY is ${config.WEB_CONCURRENCY}, above the ${cores} cores of this machine: the workers take turns on them, each with its memory and its database connections`)
  }
  logger.info({ workers: config.WEB_CONCURRENCY }, 'starting workers')
  // One worker first, the others once it listens: a setting that cannot work (a port in use) then
  // fails once, with one line, not once per worker.
  fork().once('listening', () => {
    if (!stopping) for (let i = 1; i < config.WEB_CONCURRENCY; i++) fork()
  })
}
