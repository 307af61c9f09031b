import fp from 'fastify-plugin'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { ApiError } from '../errors.js'
import { sendError } from './error-handler.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answered even while load is shed: liveness, which must not get an instance that is only busy restarted. */
    servedUnderLoad?: boolean
  }
  interface FastifyInstance {
    /** Whether the event loop's delay, at the last sample, was past the limit. */
    isUnderPressure: () => boolean
  }
}

const OVERLOADED = new ApiError(503, 'service_unavailable', 'The server is overloaded; retry later', {
  headers: { 'retry-after': '1' }
})

// The histogram's own timer period: its mean is never below it.
const RESOLUTION_MS = 10

/**
 * Sheds load (503 with the Error body and Retry-After) while the event loop is delayed past
 * `maxEventLoopDelayMs`, from the second sample after the service is ready: start-up work (compiling
 * schemas, opening the store) delays the loop too, and on a busy machine made the first requests of a
 * service that had just started 503, which is not overload.
 *
 * Written here rather than with @fastify/under-pressure, which measured the loop the same way: its
 * sampler also read the process's memory (`process.memoryUsage()`), which throws when the process has
 * no file descriptor left (EMFILE, say under a flood of idle connections), from a timer, where the
 * throw ended the process.
 */
export default fp<{ maxEventLoopDelayMs: number }>(async (app, { maxEventLoopDelayMs }) => {
  // Sampled often enough to notice a delay of that length.
  const sampleInterval = Math.min(1000, maxEventLoopDelayMs / 2)
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  histogram.enable()
  let delayMs = 0
  const sampler = setInterval(() => {
    // No sample in a whole interval: the loop never came round to take one.
    delayMs = histogram.count === 0 ? Infinity : Math.max(0, histogram.mean / 1e6 - RESOLUTION_MS)
    histogram.reset()
  }, sampleInterval).unref()
  app.addHook('onClose', async () => {
    clearInterval(sampler)
    histogram.disable()
  })

  let started = false
  app.addHook('onReady', (done) => {
    setTimeout(() => { started = true }, 2 * sampleInterval).unref()
    done()
  })
  const underPressure = () => delayMs > maxEventLoopDelayMs
  app.decorate('isUnderPressure', underPressure)
  app.addHook('onRequest', (request, reply, done) => {
    if (started && underPressure() && request.routeOptions.config.servedUnderLoad !== true) sendError(OVERLOADED, request, reply)
    else done()
  })
}, { name: 'load-shedding' })
