import fp from 'fastify-plugin'
import type { Metrics } from '../metrics/metrics.js'

/** Counts and times every answer by method, route pattern (not the raw URL) and status. */
export default fp<{ metrics: Metrics }>(async (app, { metrics }) => {
  app.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) }
    metrics.httpRequests.inc(labels)
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000)
    done()
  })
}, { name: 'metrics' })
