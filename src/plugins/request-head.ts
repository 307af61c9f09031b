import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { countHeaderLines, repeatedHeader } from '../header-lines.js'
import { printable } from '../printable.js'

export const HOST_REQUIRED = new ApiError(400, 'bad_request', 'An HTTP/1.1 request must carry a Host header')
const INVALID_HOST = new ApiError(400, 'bad_request', 'The Host header must be a host name or address, with an optional port')
const FRAGMENT = new ApiError(400, 'bad_request', 'The request target holds a `#`: a URL\'s fragment is not sent to the server, and a `#` in a value is sent as %23')
// RFC 3986's uri-host (an IP literal in brackets, or a registered name or IPv4 address) and an optional port.
const HOST = /^(?:\[[\dA-Fa-f:.]+\]|[\w\-.~!$&'()*+,;=%]*)(?::\d*)?$/
// Where a body's length is unknown, what follows the head may be its body or a next request: the
// connection is closed after the answer (RFC 9112, section 6.3), and no request after it is served
// (see pipelined-requests), where what Node parsed as one may have been sent to get past a proxy in
// front as this one's body (request smuggling).
const UNKNOWN_LENGTH = { headers: { connection: 'close' } }
const HTTP_1_0_TRANSFER_ENCODING = new ApiError(400, 'bad_request', 'An HTTP/1.0 request cannot carry Transfer-Encoding; send the body with a Content-Length', UNKNOWN_LENGTH)
const EMPTY_TRANSFER_ENCODING = new ApiError(400, 'bad_request', 'The Transfer-Encoding header is empty; send the body chunked or with a Content-Length', UNKNOWN_LENGTH)
// An empty list, which is what Node makes of several empty lines (`, `), names no coding either.
const NO_CODINGS = /^[\s,]*$/
/** The methods whose requests Fastify serves without reading a body (it reads, and limits, the others'). */
export const BODILESS_METHODS = new Set(['GET', 'HEAD'])

/**
 * The 400 for a body in a transfer coding other than chunked alone: Node takes `gzip, chunked` apart
 * from its chunks but does not decode it, so it would be read as JSON in its coding, and refuses
 * `gzip` alone only once the request is handed over. (RFC 9112 suggests a 501, but the request is
 * what is wrong.) The connection closes, as after any answer given before the body is read (see the
 * error handler).
 */
function unsupportedTransferCoding (codings: string): ApiError {
  return new ApiError(400, 'bad_request', `Transfer-Encoding ${printable(codings)} is not accepted; send the body chunked or with a Content-Length, in no other transfer coding`)
}

/**
 * What HTTP/1.1 (RFC 9112) asks a server to refuse in a request's head, and Node lets through or
 * answers without the Error body:
 * - without a Host header, an HTTP/1.1 request, and with more than one or with a value that is no
 *   host, any (section 3.2). Node's own check answers the first with an empty body, so buildApp turns
 *   that off (`requireHostHeader`); of the second it keeps the first Host, where a proxy in front may
 *   route by the last; the third it lets through;
 * - an HTTP/1.0 request with Transfer-Encoding, whose framing must be taken as faulty (section 6.1):
 *   Node reads its body as chunked, where an HTTP/1.0 proxy in front may not; an empty
 *   Transfer-Encoding, which Node takes for no body, reading the body's bytes as a next request; and
 *   a body in another transfer coding than chunked alone;
 * - a request line of another major version (HTTP/2.0), which Node served as HTTP/1.1;
 * - a `#` in the request target, which no form of it holds (section 3.2): the router took it for the
 *   start of a query, so `/v1/pets/1#x` was refused for an unknown query parameter `x`.
 */
export default fp(async (app) => {
  app.addHook('onRequest', ({ raw }, _reply, done) => {
    const otherVersion = otherHttpVersion(raw)
    if (otherVersion !== undefined) {
      done(otherVersion)
      return
    }
    if (raw.url!.includes('#')) {
      done(FRAGMENT)
      return
    }
    const http10 = raw.httpVersionMinor === 0
    const transferCodings = raw.headers['transfer-encoding']
    if (transferCodings !== undefined && (http10 || NO_CODINGS.test(transferCodings))) {
      done(http10 ? HTTP_1_0_TRANSFER_ENCODING : EMPTY_TRANSFER_ENCODING)
      return
    }
    // Before the body's type is looked at: for one not JSON, a 415 was the answer, and the parser's 400 a second.
    if (transferCodings !== undefined && !BODILESS_METHODS.has(raw.method!) && transferCodings.trim().toLowerCase() !== 'chunked') {
      done(unsupportedTransferCoding(transferCodings))
      return
    }
    if (raw.headers.host === undefined) {
      done(http10 ? undefined : HOST_REQUIRED)
      return
    }
    const hosts = countHeaderLines(raw.rawHeaders, 'host')
    done(hosts > 1 ? repeatedHeader('Host', hosts) : HOST.test(raw.headers.host) ? undefined : INVALID_HOST)
  })
}, { name: 'request-head' })

/** The 400 for a request line of another major version than 1 (HTTP/2.0), which Node serves as HTTP/1.1. */
export function otherHttpVersion ({ httpVersionMajor, httpVersion }: IncomingMessage): ApiError | undefined {
  return httpVersionMajor === 1 ? undefined : new ApiError(400, 'bad_request', `HTTP/${httpVersion} is not served here: send HTTP/1.1`)
}

/** Whether a request announces a body to read: a `Transfer-Encoding`, or a `Content-Length` other than 0. */
export function announcesBody ({ headers }: IncomingMessage): boolean {
  const { 'transfer-encoding': codings, 'content-length': length = '0' } = headers
  return codings !== undefined || length !== '0'
}

/**
 * Whether a request's `Expect` asks for 100-continue and nothing else. Node's test takes any value
 * holding it (`foo, 100-continue`, `100-continue;a=b`), and a list asks for each of its members
 * (RFC 9110, section 10.1.1), which are not met.
 */
export function expectsOnlyContinue ({ headers }: IncomingMessage): boolean {
  return headers.expect?.trim().toLowerCase() === '100-continue'
}
