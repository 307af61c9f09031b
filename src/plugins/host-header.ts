import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

const HOST_REQUIRED = new ApiError(400, 'bad_request', 'An HTTP/1.1 request must carry a Host header')

/**
 * An HTTP/1.1 request without a Host header is a 400 (RFC 9112, section 3.2). Node's own check
 * answers it with an empty body, so buildApp turns that off (`requireHostHeader`) and this answers
 * in the Error shape instead. HTTP/1.0 has no such rule.
 */
export default fp(async (app) => {
  app.addHook('onRequest', ({ raw }, _reply, done) => {
    done(raw.headers.host === undefined && raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1 ? HOST_REQUIRED : undefined)
  })
}, { name: 'host-header' })
