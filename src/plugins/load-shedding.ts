import underPressure from '@fastify/under-pressure'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { sendError } from './error-handler.js'

/** Past this event-loop delay the instance answers 503 at once instead of queueing more work. */
export const MAX_EVENT_LOOP_DELAY_MS = 1000

const OVERLOADED = new ApiError(503, 'service_unavailable', 'The server is overloaded; retry later', {
  headers: { 'retry-after': '1' }
})

/** Sheds load (503 with the Error body and Retry-After) while the event loop is saturated. */
export default fp(async (app) => {
  await app.register(underPressure, {
    maxEventLoopDelay: MAX_EVENT_LOOP_DELAY_MS,
    pressureHandler: (request, reply) => { sendError(OVERLOADED, request, reply) }
  })
}, { name: 'load-shedding' })
