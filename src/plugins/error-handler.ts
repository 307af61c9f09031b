import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError, type ErrorBody, type ErrorCode } from '../errors.js'
import { HEAD_TOO_LARGE_MESSAGE, NOT_IMPLEMENTED_MESSAGE, requestTimeoutMessage } from '../openapi/unread-requests.js'
import { OutageLog } from '../outage-log.js'
import { printable } from '../printable.js'
import { isStoreUnavailable } from '../store/store-errors.js'
import { trimEnd } from '../trim-end.js'
import { emptyBody, unsupportedMediaType } from './json-body.js'
import { holdRequestsAfter } from './pipelined-requests.js'
import { announcesBody, BODILESS_METHODS } from './request-head.js'
import { SECURITY_HEADERS } from './security-headers.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Where 503s are logged: once a kind, then counted (see OutageLog). */
    outageLog: OutageLog
  }
}

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'header_too_large',
  503: 'service_unavailable'
}

export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/** Maps any error (ours, Fastify's, the store's or an unexpected one) to the one the client sees. */
function toApiError (error: FastifyError | Error, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error
  const fastifyError = error as FastifyError
  if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return unsupportedMediaType(request.headers['content-type'])
  // Fastify's message holds the whole path: kilobytes sent back for nothing.
  if (fastifyError.code === 'FST_ERR_MAX_PARAM_LENGTH') return uriTooLong(request.server.initialConfig.routerOptions?.maxParamLength ?? 0, error)
  if (fastifyError.code === 'FST_ERR_BAD_URL') {
    // Fastify's message quotes the whole URL, with whatever key was put in its query.
    return isBadAbsoluteTarget(request.raw.url ?? '') ? badAbsoluteTarget(error) : pathNotPercentEncoded(error)
  }
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = request.routeOptions.bodyLimit ?? request.server.initialConfig.bodyLimit ?? 0
    return new ApiError(413, 'payload_too_large', `The body is larger than the limit of ${limit} bytes (${limit / 1024} KiB)`, { cause: error })
  }
  if (fastifyError.validation !== undefined) {
    // No body at all (nor a Content-Type, which would have had it parsed) is as empty as an empty one.
    if (fastifyError.validationContext === 'body' && request.body === undefined) return emptyBody(error)
    return new ApiError(400, 'validation_failed', error.message, { cause: error })
  }
  // Node's error for a body cut short by the client carries ECONNRESET, as a lost store connection's
  // does: it is the client's doing, and no outage.
  if (error === request.raw.errored) return new ApiError(400, 'bad_request', 'The connection closed before the request body was whole', { cause: error })
  if (isStoreUnavailable(error)) {
    return new ApiError(503, 'service_unavailable', 'The store is unavailable; retry later', {
      cause: error,
      headers: { 'retry-after': '1' }
    })
  }
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) {
    return new ApiError(status, CODE_BY_STATUS[status] ?? 'bad_request', error.message, { cause: error })
  }
  // Anything else is our fault: say so without any detail that could leak internals.
  return new ApiError(500, 'internal_error', 'Internal error', { cause: error })
}

/**
 * Sends an error as the Error body. A 500 is logged with the request id, which its message names; a
 * 503 goes to the outage log, which logs the first of a kind and counts the others.
 */
export function sendError (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void {
  const apiError = toApiError(error, request)
  if (apiError.status === 503) {
    request.server.outageLog.failed(outageKind(apiError), apiError.cause, apiError.planned ? 'info' : 'error')
  } else if (apiError.status >= 500) {
    request.log.error({ err: error }, 'request failed')
    apiError.message = `Internal error (request id ${request.id})`
  }
  // Answered before its body was read (a 401 to a POST announcing gigabytes, say): a long body, or one
  // of unknown length, closes the connection, sparing the read, and so does a 400 (a head a proxy in
  // front may have framed otherwise). A short one is read and dropped after the answer, as Node does
  // with a body nobody read, and the connection stays: closed with the body unread, the connection is
  // reset by the kernel, and a proxy in front still sending the body (nginx) got the reset before the
  // answer, and answered 502. (A request without a body is not `complete` yet when a synchronous hook
  // answers it; its connection stays.)
  if (announcesBody(request.raw) && !request.raw.complete) {
    if (apiError.status !== 400 && isDrainedAfterAnswer(request.raw)) dropBodyAfterAnswer(request, reply)
    else reply.header('connection', 'close')
  }
  // Set here too, as the other error writers below do: a refusal by a hook before security-headers'
  // own, or by the router (a malformed path, an id too long), comes before that hook or without it.
  reply.code(apiError.status).headers(SECURITY_HEADERS).headers(apiError.headers).send(apiError.toBody())
}

/**
 * The longest body, by its Content-Length, read and dropped after an answer given before it: nginx's
 * default `client_max_body_size`, so that a body such a proxy passes on is taken whole.
 */
const DRAINED_BODY_BYTES = 1024 * 1024

/**
 * Whether a request answered before its body was read has that body read after the answer (see
 * sendError): one of a known length, up to DRAINED_BODY_BYTES, whose client was not asked to wait for
 * `100 Continue` (one that waits may never send it; Node closes its connection), and not a GET's or
 * HEAD's, whose connection closes (see pipelined-requests).
 */
function isDrainedAfterAnswer ({ headers, method }: IncomingMessage): boolean {
  const length = headers['content-length']
  return !BODILESS_METHODS.has(method!) && headers['transfer-encoding'] === undefined && headers.expect === undefined && length !== undefined && Number(length) <= DRAINED_BODY_BYTES
}

/**
 * Lets the body of a request answered before it be read and dropped after the answer (Node does so
 * with a body nobody read), keeping the connection. Fastify's parser asks to close it with its 413: a
 * connection that may stay (the client did not ask to close it, the server is not closing) is said to
 * stay instead, as Node says it of the others. Until the body has come, its connection is marked, so
 * that a fault in it (a body that never comes whole: the request timeout) closes the connection
 * without a second answer.
 */
function dropBodyAfterAnswer (request: FastifyRequest, reply: FastifyReply): void {
  const { raw, socket } = request
  if (reply.getHeader('connection') === 'close' && reply.raw.shouldKeepAlive && !reply.raw.hasHeader('connection')) {
    reply.header('connection', 'keep-alive').header('keep-alive', `timeout=${Math.floor(request.server.server.keepAliveTimeout / 1000)}`)
  }
  bodiesDropped.set(socket, raw)
  // Only its own mark: a later request on the connection may have set one since.
  raw.once('end', () => { if (bodiesDropped.get(socket) === raw) bodiesDropped.delete(socket) })
}

/**
 * The connections whose request's body is being dropped after its answer (see dropBodyAfterAnswer),
 * with that request: a fault is in its body only while it is not `complete`, which the parser sets
 * as the body ends, where `end` comes later (a request pipelined after it, in the same read, may
 * already have faulted).
 */
const bodiesDropped = new WeakMap<Socket, IncomingMessage>()

function isDroppingBody (socket: Socket): boolean {
  return bodiesDropped.get(socket)?.complete === false
}

/** A 503's kind in the outage log: the store's error when the store is the cause, else the message. */
function outageKind ({ message, cause }: ApiError): string {
  if (!isStoreUnavailable(cause)) return message
  const { code, message: reason } = cause as { code?: string, message: string }
  return `store unavailable (${code ?? reason})`
}

/**
 * 405 with `Allow` when the path exists for other methods only, else 404 (also when a route of this
 * method found nothing, as the static files of /docs do, through `reply.callNotFound()`). A request no
 * route matches gets this answer from the preParsing hook below, before its body is read.
 */
export async function answerNotFound (request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  throw notFoundError(request)
}

function notFoundError (request: FastifyRequest): ApiError {
  const path = request.url.split('?', 1)[0] ?? '/'
  const withoutSlash = trimEnd(path, '/')
  if (withoutSlash !== path && withoutSlash !== '' && routeMethods(request, withoutSlash).length > 0) {
    return new ApiError(404, 'not_found', 'No resource at this path: the service\'s paths take no trailing slash')
  }
  const allowed = routeMethods(request, path)
  if (allowed.length > 0 && !allowed.includes(request.method)) return methodNotAllowed(request.method, allowed)
  return new ApiError(404, 'not_found', 'No resource at this path')
}

function routeMethods (request: FastifyRequest, path: string): string[] {
  return ROUTE_METHODS.filter((method) => request.server.findRoute({ method, url: path }) !== null)
}

/**
 * Whether the API path of `url` (query aside) ends in "/", which names no resource: one URL per
 * resource keeps caches and the rate limit's keys whole. (`/v1/pets/` would otherwise reach getPet
 * with an empty petId and its misleading 400.) Read in place, as every request asks.
 */
export function hasTrailingSlash (url: string): boolean {
  const query = url.indexOf('?')
  const last = (query === -1 ? url.length : query) - 1
  return last > 3 && url.charCodeAt(last) === SLASH && url.startsWith('/v1/')
}

const SLASH = 0x2f

/** The router's 400 to a path that is not percent-encoded UTF-8. */
export function pathNotPercentEncoded (cause?: unknown): ApiError {
  return new ApiError(400, 'bad_request', 'The path is not valid percent-encoded UTF-8', { cause })
}

/** Whether a request target in absolute form (`http://host:port/path`, RFC 9112 section 3.2.2) is no URL: its host or port is not valid. */
function isBadAbsoluteTarget (target: string): boolean {
  return !target.startsWith('/') && !URL.canParse(target)
}

function badAbsoluteTarget (cause: unknown): ApiError {
  return new ApiError(400, 'bad_request', 'The request target is an absolute URL whose host or port is not valid: send the path alone, with the host in Host', { cause })
}

/** The 414 answer to a path parameter (an id) longer than the router takes. */
export function uriTooLong (maxParamLength: number, cause?: unknown): ApiError {
  return new ApiError(414, 'uri_too_long', `A path segment is longer than ${maxParamLength} characters`, { cause })
}

/** The 405 answer to `method` on a path that serves only the `allowed` methods (in ROUTE_METHODS order). */
export function methodNotAllowed (method: string, allowed: string[]): ApiError {
  return new ApiError(405, 'method_not_allowed', `${method} is not allowed here; use ${allowed.join(', ')}`, {
    headers: { allow: allowed.join(', ') }
  })
}

// The security headers as the lines of an answer written to the socket itself.
const SECURITY_HEADER_LINES = Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('')

/**
 * Answers a malformed HTTP request (bad header, header too large, timeout) with the Error body;
 * Fastify calls this from the socket, before any request object exists. Bytes after a request that
 * asked to close are no request (RFC 9112, section 9.6): the connection closes after its answer, and
 * they get none.
 */
export function answerClientError (error: NodeJS.ErrnoException, socket: Socket, count: CountUnread): void {
  // A connection that has sent nothing in the time for a head (browsers open some ahead of need) has
  // no request to answer: an unasked 408 would be read as the answer to the next one it sends.
  const nothingSent = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0
  if (error.code === 'ECONNRESET' || nothingSent || !socket.writable || isDroppingBody(socket)) {
    socket.destroy()
    return
  }
  afterAnswersBefore(socket, () => {
    if (error.code === 'HPE_CLOSED_CONNECTION') {
      socket.end()
      return
    }
    if (isUnknownMethod(error)) {
      endWithError(socket, NOT_IMPLEMENTED, count)
      return
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
    const message = clientErrorMessage(error, status, (socket as { server?: Server }).server)
    endWithError(socket, { code: CODE_BY_STATUS[status]!, message, status }, count, { head: isHeadRequest(error) })
  })
}

/** What the answer to a request that could not be read says: what to change, with the limit it passed. */
function clientErrorMessage (error: NodeJS.ErrnoException, status: number, server: Server | undefined): string {
  if (status === 408 && server !== undefined) return requestTimeoutMessage(server)
  if (status === 431) return HEAD_TOO_LARGE_MESSAGE
  if (error.code === 'HPE_PAUSED_H2_UPGRADE') return 'HTTP/2 is not served here: send HTTP/1.1' // its preface, PRI * HTTP/2.0
  if (error.code === 'HPE_INVALID_EOF_STATE') return 'The connection closed before the request was whole'
  // A parse error's reason is a fixed text of Node's parser ("Duplicate Content-Length"), never the request's bytes.
  const { reason } = error as { reason?: unknown }
  return status === 400 && typeof reason === 'string' ? `The request is not valid HTTP: ${reason}` : STATUS_CODES[status]!
}

/** Counts an answer to a request that could not be read whole, by its status (the API's metrics). */
export type CountUnread = (status: number) => void
/** For a listener whose answers are not counted (the metrics listener's own). */
export const NOT_COUNTED: CountUnread = () => {}

const NOT_IMPLEMENTED: ErrorBody = {
  code: 'not_implemented',
  message: NOT_IMPLEMENTED_MESSAGE,
  status: 501
}
// A request line (RFC 9112, section 3) whose method is a token, though not one Node's parser knows.
const REQUEST_LINE = /^[-!#$%&'*+.^_`|~0-9A-Za-z]+ [^\s]+ HTTP\/\d\.\d\r?$/

/**
 * Whether Node's parser stopped at a method it does not know in an otherwise well-formed request
 * line (`FOO /v1/pets HTTP/1.1`, or `get`: methods are case-sensitive), which RFC 9110 (section 9.1)
 * answers 501; other bytes (a TLS handshake on this plain port, say) stay a 400. The line is read
 * from the chunk the parser failed in, where it stopped inside the method.
 */
function isUnknownMethod (error: NodeJS.ErrnoException): boolean {
  const { rawPacket, bytesParsed } = error as { rawPacket?: unknown, bytesParsed?: unknown }
  if (error.code !== 'HPE_INVALID_METHOD' || !Buffer.isBuffer(rawPacket) || typeof bytesParsed !== 'number') return false
  // (A negative offset would count from the end.)
  const start = bytesParsed > 0 ? rawPacket.lastIndexOf('\n', bytesParsed - 1) + 1 : 0
  const end = rawPacket.indexOf('\n', start)
  return end !== -1 && REQUEST_LINE.test(rawPacket.toString('latin1', start, end))
}

// The connections whose fault is dealt with (answered once the answers before it are, or closing after
// the answer of its own request): the parser reports it again with every chunk that follows.
const faultsSeen = new WeakSet<Socket>()

/**
 * Calls `answer` once the requests read whole before a fault on the connection (malformed bytes,
 * CONNECT) are answered: Node reports the fault as soon as it parses it, and ending the connection
 * then dropped their answers, though they were served (a create committed, and its client told
 * 400). A fault in the request being read (its body, its timeout) is answered at once, unless that
 * request was answered already (a fault Node finds in its head only after handing it over, a body in
 * no chunked coding, or one in its body once an event stream is under way): the connection then
 * closes after that answer, the only one.
 */
function afterAnswersBefore (socket: Socket, answer: () => void): void {
  // Node's own property: the answer being written on this connection, the first of those to come.
  const answering = (socket as { _httpMessage?: ServerResponse | null })._httpMessage
  if (answering == null) {
    answer()
    return
  }
  // Still being read: the answer under way is the faulty request's own.
  const ownAnswer = !answering.req.complete
  if (ownAnswer && !answering.headersSent) {
    answer()
    return
  }
  if (faultsSeen.has(socket)) return
  faultsSeen.add(socket)
  if (ownAnswer) {
    // Its writes may be held to the end of the turn (see write-coalescing); an event stream's go on.
    if (answering.writableFinished) socket.end()
    else answering.once('finish', () => socket.end())
    return
  }
  answering.once('close', () => {
    faultsSeen.delete(socket)
    afterAnswersBefore(socket, answer)
  })
}

const NO_TUNNEL = new ApiError(400, 'bad_request', 'CONNECT is not served: this server is an API, not a proxy').toBody()

/** Answers CONNECT, which Node hands over as a socket to tunnel: without this, it closes the connection without an answer. */
export function answerConnect (_request: IncomingMessage, socket: Socket, count: CountUnread): void {
  // Node hands it over without the server's error listener: a client that resets the connection (any
  // client can) would otherwise be an uncaught error, which stops the service. Its answer is lost with it.
  socket.on('error', () => {})
  afterAnswersBefore(socket, () => { endWithError(socket, NO_TUNNEL, count) })
}

/**
 * Writes an answer with the Error body to the socket itself, where there is no request to answer
 * through, and closes the connection; to a HEAD request without the body (RFC 9110, section 9.3.2),
 * which Node's client took for bytes after the answer, failing the call without its status.
 */
function endWithError (socket: Socket, error: ErrorBody, count: CountUnread, { head = false } = {}): void {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  count(error.status)
  const body = JSON.stringify(error)
  // No-store, as the API's answers: a 501 is cacheable by default (RFC 9110, section 15.1).
  socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n${SECURITY_HEADER_LINES}` +
    `Cache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`)
}

/**
 * Whether the request Node's parser failed in is a HEAD, as far as the bytes it failed in show: its
 * request line, after the head of the request before it (if any) there. One whose head came in
 * several reads, the line in an earlier one, counts as another method's.
 */
function isHeadRequest (error: NodeJS.ErrnoException): boolean {
  const { rawPacket, bytesParsed } = error as { rawPacket?: unknown, bytesParsed?: unknown }
  if (!Buffer.isBuffer(rawPacket) || typeof bytesParsed !== 'number') return false
  const headEnd = bytesParsed > 0 ? rawPacket.lastIndexOf('\r\n\r\n', bytesParsed - 1) : -1
  const start = headEnd === -1 ? 0 : headEnd + 4
  return rawPacket.toString('latin1', start, start + 5) === 'HEAD '
}

/**
 * Answers through Node's own response, where Fastify has no reply (Node's events, the metrics
 * listener), with the Error body and the headers every answer carries; `close` ends the connection.
 */
export function answerWithError (response: ServerResponse, error: ApiError, { close = false } = {}): void {
  const body = JSON.stringify(error.toBody())
  response.writeHead(error.status, {
    ...SECURITY_HEADERS,
    ...error.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...(close && { connection: 'close' })
  }).end(body)
}

/**
 * Answers a request whose `Expect` header is not `100-continue` with the Error body: Node calls this
 * instead of the app (without it, Node sends an empty 417).
 */
export function answerUnmetExpectation (request: IncomingMessage, response: ServerResponse, count: CountUnread): void {
  // The requests pipelined after this one reach the app meanwhile: they wait for this answer, which
  // closes the connection, and are not served.
  holdRequestsAfter(request, response)
  count(417)
  answerWithError(response, new ApiError(417, 'expectation_failed', `Expect: ${printable(request.headers.expect ?? '')} cannot be met; only 100-continue can`), { close: true })
}

/** One error handler and one not-found handler for the whole app, so every error has the Error body. */
export default fp<{ outageReportMs?: number, countUnread: CountUnread }>(async (app, { outageReportMs, countUnread }) => {
  const outageLog = new OutageLog(app.log, 'answering 503', outageReportMs)
  app.decorate('outageLog', outageLog)
  app.addHook('onClose', async () => { outageLog.close() })
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => { answerUnmetExpectation(request, response, countUnread) })
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => { answerConnect(request, socket, countUnread) })
  app.setErrorHandler(sendError)
  app.setNotFoundHandler(answerNotFound)
  // A path or method the API does not serve is answered before the body is read: the 404 or 405
  // holds whatever the body is, so a body too large, of another type or malformed cannot answer first.
  // So is an API path with a trailing slash, which a route with a parameter last would otherwise take.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if (request.is404 || hasTrailingSlash(request.url)) done(notFoundError(request))
    else done(null, payload)
  })
}, { name: 'error-handler' })
