import type { Metric, Registry } from 'prom-client'

/** The observations of one label set: a count, a sum and a count per bucket. */
export class TallySeries {
  count = 0
  sum = 0
  readonly bucketCounts: number[]

  constructor (readonly labels: Readonly<Record<string, string>>, private readonly bounds: readonly number[]) {
    this.bucketCounts = new Array<number>(bounds.length + 1).fill(0)
  }

  observe (value: number): void {
    this.count++
    this.sum += value
    let bucket = 0
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket++
    this.bucketCounts[bucket]!++
  }
}

/**
 * A histogram counted in plain numbers on the path of every request, and handed to prom-client only
 * when /metrics is read. prom-client's own Histogram and Counter build and hash a key from the labels
 * at every observation, even through `labels()`: on every request that cost more than the rest of the
 * metrics together. A series is looked up once per label set and kept by the caller.
 */
export class HistogramTally {
  readonly #series = new Map<string, TallySeries>()

  constructor (readonly labelNames: readonly string[], readonly buckets: readonly number[]) {}

  /** The series of these label values (in the order of `labelNames`), made on first use. */
  series (...values: string[]): TallySeries {
    const key = values.join('\u0000')
    let series = this.#series.get(key)
    if (series === undefined) {
      series = new TallySeries(Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]!])), this.buckets)
      this.#series.set(key, series)
    }
    return series
  }

  /** Exposes the tally in `registry` as a Prometheus histogram. */
  registerHistogram (registry: Registry, name: string, help: string): void {
    this.#register(registry, name, help, 'histogram', () => [...this.#series.values()].flatMap((series) => {
      let cumulative = 0
      const buckets = [...this.buckets, '+Inf'].map((bound, i) => {
        cumulative += series.bucketCounts[i]!
        return { metricName: `${name}_bucket`, labels: { le: bound, ...series.labels }, value: cumulative }
      })
      return [...buckets, { metricName: `${name}_sum`, labels: series.labels, value: series.sum }, { metricName: `${name}_count`, labels: series.labels, value: series.count }]
    }))
  }

  /** Exposes the count of observations in `registry` as a Prometheus counter. */
  registerCounter (registry: Registry, name: string, help: string): void {
    this.#register(registry, name, help, 'counter', () => [...this.#series.values()].map((series) => ({ labels: series.labels, value: series.count })))
  }

  // prom-client reads a metric through `get()`, the contract its own metric classes keep.
  #register (registry: Registry, name: string, help: string, type: 'histogram' | 'counter', values: () => unknown[]): void {
    const metric = {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      reset: () => { this.#series.clear() }
    }
    registry.registerMetric(metric as unknown as Metric)
  }
}
