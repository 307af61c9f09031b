import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { isStoreUnavailable } from '../store/store-errors.js'
import type { DeliveryAnswer } from './webhook-transport.js'

/**
 * How long a scrape waits for the queue's depth, which the store is asked for: past it the depth is
 * unknown (NaN). Under the primary's wait for each worker's metrics (WEB_CONCURRENCY; see
 * cluster-metrics.ts): past that, a worker kept waiting on a store that answers late (frozen, or at
 * its connection deadline) would have the primary serve its counts of before the outage throughout.
 */
export const QUEUE_DEPTH_WAIT_MS = 500

/** Webhook deliveries on /metrics: attempts by outcome, latency from the change to its delivery, and the queue's depth. */
export class WebhookMetrics {
  readonly #attempts: Counter<'outcome'>
  readonly #latency: Histogram

  constructor (registry: Registry, owedEvents: () => Promise<number>) {
    this.#attempts = new Counter({
      name: 'petstore_webhook_deliveries_total',
      help: 'Delivery attempts, by outcome: delivered (a 2xx) or failed',
      labelNames: ['outcome'],
      registers: [registry]
    })
    // Each outcome's series from the start, at 0, as the expired rows' kinds are: a rate over a series
    // that appears only at its first failure reads nothing until then.
    for (const outcome of ['delivered', 'failed']) this.#attempts.inc({ outcome }, 0)
    this.#latency = new Histogram({
      name: 'petstore_webhook_delivery_latency_seconds',
      help: 'From the change (its event\'s occurredAt) to the receiver\'s 2xx, retries included',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600, 86_400],
      registers: [registry]
    })

    new Gauge({
      name: 'petstore_webhook_queue_depth',
      help: `Events after the position of each enabled subscription, summed (of any type: an upper bound); NaN while the store cannot be read within ${QUEUE_DEPTH_WAIT_MS} ms`,
      registers: [registry],
      // Every worker (WEB_CONCURRENCY) reads the one store: their values are not added up.
      aggregator: 'max',
      // Read from the store: during an outage it is unknown (NaN; with no value, prom-client writes 0),
      // and the scrape goes on (a collect that throws failed all of it, when the rest matters most).
      async collect () {
        this.set(await depthWithin(owedEvents, QUEUE_DEPTH_WAIT_MS))
      }
    })
  }

  /** An attempt made; `occurredAt`, the time of the change, for an attempt of the subscription's own (not a retry asked for). */
  attempted (answer: DeliveryAnswer, now: number, occurredAt?: string): void {
    const delivered = answer.error === undefined
    this.#attempts.inc({ outcome: delivered ? 'delivered' : 'failed' })
    if (delivered && occurredAt !== undefined) this.#latency.observe((now - Date.parse(occurredAt)) / 1000)
  }
}

/** The queue's depth, or NaN when the store cannot be read or has not answered within `ms`. */
async function depthWithin (owedEvents: () => Promise<number>, ms: number): Promise<number> {
  const read = owedEvents().catch((error: unknown) => {
    if (!isStoreUnavailable(error)) throw error
    return Number.NaN
  })
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<number>((resolve) => { timer = setTimeout(resolve, ms, Number.NaN) })
  try {
    return await Promise.race([read, late])
  } finally {
    clearTimeout(timer)
  }
}
