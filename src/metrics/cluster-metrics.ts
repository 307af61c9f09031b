import cluster, { type Worker } from 'node:cluster'
import { AggregatorRegistry, Registry } from 'prom-client'
import { ApiError } from '../errors.js'

// prom-client's own messages, which each worker answers from the listener reportToPrimary installs.
const REQUEST = 'prom-client:getMetricsReq'
const RESPONSE = 'prom-client:getMetricsRes'
/** How long a scrape waits for a worker's answer; past it, the worker counts as its last answer's counts. */
export const ANSWER_MS = 1000

const NOTHING_KNOWN = new ApiError(503, 'service_unavailable', 'No worker has answered a scrape yet (starting, or frozen): nothing is known to show', {
  headers: { 'retry-after': '1' }
})

/** A worker's metrics as `Registry.getMetricsAsJSON()` gives them, and `AggregatorRegistry.aggregate` takes them. */
type MetricsJson = Array<{ name: string, type: string, values: unknown[] }>

/**
 * The workers' metrics, summed, for the primary process's /metrics (WEB_CONCURRENCY). prom-client's
 * `clusterMetrics` sums the workers alive at each scrape: a worker replaced took its counts away, so
 * the counters went down (which Prometheus reads as a reset, and `rate()` as a burst of requests that
 * never were), and a worker still starting held a scrape 5 s, then failed it. Here a worker that exits
 * leaves its counters and histograms as its last answer had them; a worker not serving yet is not
 * asked; one that does not answer within a second counts as its last answer's counters. Until one has
 * answered, a scrape fails (503).
 */
export class ClusterMetrics {
  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE
  /** Each worker's last answer. */
  readonly #last = new Map<Worker, MetricsJson>()
  /** The counts of the workers that exited, summed. */
  #retired: MetricsJson = []
  readonly #retiredWorkers = new WeakSet<Worker>()
  readonly #waiting = new Map<number, (metrics: MetricsJson | undefined) => void>()
  #nextRequestId = 0

  constructor () {
    cluster.on('message', (_worker, message: { type?: unknown, requestId?: number, metrics?: MetricsJson[] }) => {
      if (message?.type === RESPONSE) this.#waiting.get(message.requestId!)?.(message.metrics?.[0])
    })
  }

  /** The sums over `workers` (those serving) and the workers that exited, in Prometheus's text format. */
  async metrics (workers: Iterable<Worker>): Promise<string> {
    const asked = [...workers]
    const answers = await Promise.all(asked.map(async (worker) => await this.#ask(worker)))
    // A worker that exited while the others answered is in the retired sums now, with what it answered:
    // counted once, not twice (a scrape during a restart summed 67 of 40 creates).
    const serving = answers.filter((_, i) => !this.#retiredWorkers.has(asked[i]!))
    // Empty, the answer would be a 200 without a series: a target up to Prometheus, and no sign why.
    if ([this.#retired, ...serving].every((metrics) => metrics.length === 0)) throw NOTHING_KNOWN
    return await AggregatorRegistry.aggregate([this.#retired, ...serving]).metrics()
  }

  /** A worker that exited: its counts stay in the sums, as of its last answer. */
  retire (worker: Worker): void {
    this.#retiredWorkers.add(worker)
    const last = this.#last.get(worker)
    this.#last.delete(worker)
    if (last === undefined) return
    // An aggregated registry holds plain metric objects (each with a `get`), readable at once.
    this.#retired = countsOf(AggregatorRegistry.aggregate([this.#retired, last]).getMetricsAsArray() as unknown as MetricsJson)
  }

  async #ask (worker: Worker): Promise<MetricsJson> {
    const requestId = this.#nextRequestId++
    const answer = await new Promise<MetricsJson | undefined>((resolve) => {
      const timer = setTimeout(() => { resolve(undefined) }, ANSWER_MS)
      this.#waiting.set(requestId, (metrics) => {
        clearTimeout(timer)
        resolve(metrics)
      })
      // With a callback, a channel closed meanwhile is an error given to it, not one thrown at the primary.
      if (!worker.isConnected()) resolve(undefined)
      else worker.send({ type: REQUEST, requestId }, (error) => { if (error !== null) resolve(undefined) })
    })
    this.#waiting.delete(requestId)
    if (answer === undefined) return countsOf(this.#last.get(worker) ?? [])
    this.#last.set(worker, answer)
    return answer
  }
}

/** The metrics that only grow (counters, and histograms' buckets, sums and counts); not gauges, which hold for a live process only. */
function countsOf (metrics: MetricsJson): MetricsJson {
  return metrics.filter(({ type }) => type === 'counter' || type === 'histogram')
}
