import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { TallySeries } from '../metrics/histogram-tally.js'
import type { Metrics } from '../metrics/metrics.js'

/** Counts and times an answer by method, route pattern (not the raw URL) and status. */
export type RecordAnswer = (request: FastifyRequest, reply: FastifyReply) => void

export function answerRecorder (metrics: Metrics): RecordAnswer {
  const seriesById = new Map<string, TallySeries>()
  return (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const id = `${request.method} ${reply.statusCode} ${route}`
    let series = seriesById.get(id)
    if (series === undefined) {
      series = metrics.http.series(request.method, route, String(reply.statusCode))
      seriesById.set(id, series)
    }
    series.observe(reply.elapsedTime / 1000)
  }
}

/**
 * Records every answer given through a route or the not-found handler. The router's own refusals (a
 * path that is not percent-encoded UTF-8, a path parameter past its length) run no hook: the app's
 * `frameworkErrors` records them.
 */
export default fp<{ recordAnswer: RecordAnswer }>(async (app, { recordAnswer }) => {
  app.addHook('onResponse', (request, reply, done) => {
    recordAnswer(request, reply)
    done()
  })
}, { name: 'metrics' })
