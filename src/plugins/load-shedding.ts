import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { sendError } from './error-handler.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answered even while load is shed: liveness, which must not get an instance that is only busy restarted. */
    servedUnderLoad?: boolean
  }
}

const OVERLOADED = new ApiError(503, 'service_unavailable', 'The server is overloaded; retry later', {
  headers: { 'retry-after': '1' }
})

/**
 * Sheds load (503 with the Error body and Retry-After) while the event loop is delayed past
 * `maxEventLoopDelayMs`, from the second sample after the service is ready: start-up work (compiling
 * schemas, opening the store) delays the loop too, and on a busy machine made the first requests of a
 * service that had just started 503, which is not overload.
 */
export default fp<{ maxEventLoopDelayMs: number }>(async (app, { maxEventLoopDelayMs }) => {
  // Sampled often enough to notice a delay of that length.
  const sampleInterval = Math.min(1000, maxEventLoopDelayMs / 2)
  let started = false
  app.addHook('onReady', (done) => {
    setTimeout(() => { started = true }, 2 * sampleInterval).unref()
    done()
  })
  await app.register(underPressure, {
    maxEventLoopDelay: maxEventLoopDelayMs,
    sampleInterval,
    // Answering nothing lets the request go on.
    pressureHandler: (request, reply) => { if (started && request.routeOptions.config.servedUnderLoad !== true) sendError(OVERLOADED, request, reply) }
  })
}, { name: 'load-shedding' })
