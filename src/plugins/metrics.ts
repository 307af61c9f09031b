import fp from 'fastify-plugin'
import type { TallySeries } from '../metrics/histogram-tally.js'
import type { Metrics } from '../metrics/metrics.js'

/** Counts and times every answer by method, route pattern (not the raw URL) and status. */
export default fp<{ metrics: Metrics }>(async (app, { metrics }) => {
  const seriesById = new Map<string, TallySeries>()
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const id = `${request.method} ${reply.statusCode} ${route}`
    let series = seriesById.get(id)
    if (series === undefined) {
      series = metrics.http.series(request.method, route, String(reply.statusCode))
      seriesById.set(id, series)
    }
    series.observe(reply.elapsedTime / 1000)
    done()
  })
}, { name: 'metrics' })
