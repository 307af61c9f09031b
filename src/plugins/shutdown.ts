import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

const SHUTTING_DOWN = new ApiError(503, 'service_unavailable', 'The server is shutting down; retry', {
  headers: { 'retry-after': '1', connection: 'close' }
})

/**
 * Once the server is closing, a request that still arrives (on a kept-alive connection) is answered
 * 503 in the Error shape, with Retry-After and Connection: close, while those already in flight
 * finish. (Fastify's own answer for this case has another body, so it is turned off in buildApp.)
 */
export default fp(async (app) => {
  let closing = false
  app.addHook('preClose', (done) => {
    closing = true
    done()
  })
  app.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? SHUTTING_DOWN : undefined)
  })
}, { name: 'shutdown' })
