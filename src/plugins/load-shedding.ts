import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { sendError } from './error-handler.js'

const OVERLOADED = new ApiError(503, 'service_unavailable', 'The server is overloaded; retry later', {
  headers: { 'retry-after': '1' }
})

/** Sheds load (503 with the Error body and Retry-After) while the event loop is delayed past `maxEventLoopDelayMs`. */
export default fp<{ maxEventLoopDelayMs: number }>(async (app, { maxEventLoopDelayMs }) => {
  await app.register(underPressure, {
    maxEventLoopDelay: maxEventLoopDelayMs,
    // Sampled often enough to notice a delay of that length.
    sampleInterval: Math.min(1000, maxEventLoopDelayMs / 2),
    pressureHandler: (request, reply) => { sendError(OVERLOADED, request, reply) }
  })
}, { name: 'load-shedding' })
