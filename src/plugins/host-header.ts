import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { countHeaderLines, repeatedHeader } from '../header-lines.js'

const HOST_REQUIRED = new ApiError(400, 'bad_request', 'An HTTP/1.1 request must carry a Host header')

/**
 * An HTTP/1.1 request without a Host header, or any request with more than one, is a 400 (RFC 9112,
 * section 3.2). Node's own check answers the first with an empty body, so buildApp turns that off
 * (`requireHostHeader`) and this answers in the Error shape instead; the second Node lets through,
 * keeping the first Host. HTTP/1.0 may come without one.
 */
export default fp(async (app) => {
  app.addHook('onRequest', ({ raw }, _reply, done) => {
    if (raw.headers.host === undefined) {
      done(raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1 ? HOST_REQUIRED : undefined)
      return
    }
    const hosts = countHeaderLines(raw.rawHeaders, 'host')
    done(hosts > 1 ? repeatedHeader('Host', hosts) : undefined)
  })
}, { name: 'host-header' })
