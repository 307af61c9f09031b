import fp from 'fastify-plugin'
import type { Metrics } from '../metrics/metrics.js'

/** Counts and times every answer by method, route pattern (not the raw URL) and status. */
export default fp<{ metrics: Metrics }>(async (app, { metrics }) => {
  // The counter and histogram of each label set, found once: prom-client's own lookup of a label
  // set (building and hashing its key) cost more than the observation on every request.
  const series = new Map<string, { count: () => void, time: (seconds: number) => void }>()
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const id = `${request.method} ${reply.statusCode} ${route}`
    let found = series.get(id)
    if (found === undefined) {
      const labels = { method: request.method, route, status: String(reply.statusCode) }
      const counter = metrics.httpRequests.labels(labels)
      const histogram = metrics.httpDuration.labels(labels)
      found = { count: () => { counter.inc() }, time: (seconds) => { histogram.observe(seconds) } }
      series.set(id, found)
    }
    found.count()
    found.time(reply.elapsedTime / 1000)
    done()
  })
}, { name: 'metrics' })
