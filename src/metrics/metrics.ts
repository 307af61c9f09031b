import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { AggregatorRegistry, collectDefaultMetrics, Counter, Registry } from 'prom-client'
import { ApiError } from '../errors.js'
import { boundLingeringClose } from '../lingering-close.js'
import { answerClientError, answerConnect, answerUnmetExpectation, answerWithError, methodNotAllowed, NOT_COUNTED } from '../plugins/error-handler.js'
import { announcesBody, expectsOnlyContinue, HOST_REQUIRED, otherHttpVersion } from '../plugins/request-head.js'
import { SECURITY_HEADERS } from '../plugins/security-headers.js'
import { HistogramTally } from './histogram-tally.js'

/**
 * The service's Prometheus metrics. They are counted whether or not METRICS_PORT is set, so that
 * setting it runs the same code: it only adds the process's own metrics and the server that shows
 * them all.
 */
export interface Metrics {
  registry: Registry
  /** Answers by method, route pattern and status: `http_requests_total` and `http_request_duration_seconds`. */
  http: HistogramTally
  /** Pet store calls by operation and outcome: `petstore_store_operation_duration_seconds`. */
  store: HistogramTally
  /** Answers to requests that could not be read whole, by status: `http_unread_requests_total`. */
  unread: Counter<'status'>
  /** Rows deleted in the background once past their retention, by kind: `petstore_expired_rows_deleted_total`. */
  expiredRowsDeleted: Counter<'kind'>
}

export function createMetrics (): Metrics {
  const registry = new Registry()
  const http = new HistogramTally(['method', 'route', 'status'], [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1])
  http.registerCounter(registry, 'http_requests_total', 'Requests answered, by route and status')
  http.registerHistogram(registry, 'http_request_duration_seconds', 'Time from receiving a request to answering it')
  const store = new HistogramTally(['operation', 'outcome'], [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1])
  store.registerHistogram(registry, 'petstore_store_operation_duration_seconds',
    'Time the pet store took per operation (findPage, findById, create, insertMany, refreshStatistics), by outcome (ok or error)')
  // Apart from http_requests_total: these have no method or route to count them by, and no duration.
  const unread = new Counter({
    name: 'http_unread_requests_total',
    help: 'Requests answered before they could be read whole (malformed, headers too large or too slow, an unknown method, CONNECT, an Expect that cannot be met), by status',
    labelNames: ['status'],
    registers: [registry]
  })
  const expiredRowsDeleted = new Counter({
    name: 'petstore_expired_rows_deleted_total',
    help: 'Rows deleted once past their retention (idempotency_keys after 24 hours, events and webhook_deliveries after EVENT_RETENTION_DAYS), by kind',
    labelNames: ['kind'],
    registers: [registry]
  })
  return { registry, http, store, unread, expiredRowsDeleted }
}

/**
 * Adds the process's own metrics (CPU, memory, event loop delay, garbage collection): once per
 * process, and only where they are served, as they observe the process from its start on.
 */
export function collectProcessMetrics ({ registry }: Metrics): void {
  collectDefaultMetrics({ register: registry })
}

/** In a worker process (WEB_CONCURRENCY): hands these metrics to the primary process, which serves them summed over the workers. */
export function reportToPrimary ({ registry }: Metrics): void {
  AggregatorRegistry.setRegistries([registry])
  // prom-client answers the primary's requests from a listener that only making an AggregatorRegistry installs.
  void new AggregatorRegistry()
}

/** Where /metrics comes from: a Registry, or the sum of the workers' (prom-client's AggregatorRegistry). */
export interface MetricsSource {
  metrics: () => Promise<string>
  contentType: string
}

/** Bounds of the metrics listener, which needs no key: a scraper needs a connection or two, and sends a request whole at once. */
export interface MetricsListenerLimits {
  /** Connections open at once; one more is closed as it comes. */
  maxConnections: number
  /** The longest a request's head may take to arrive (408 after). */
  headersTimeoutMs: number
  /** The longest a whole request may take to arrive. */
  requestTimeoutMs: number
  /** The longest a connection this side has closed waits for the client to close it too (see boundLingeringClose). */
  lingerMs: number
}

const METRICS_LISTENER_LIMITS: MetricsListenerLimits = { maxConnections: 64, headersTimeoutMs: 5000, requestTimeoutMs: 10_000, lingerMs: 2000 }

/**
 * GET /metrics in the Prometheus text format, on its own port, apart from the API and its keys. What
 * Node answers before a request exists (malformed HTTP, CONNECT) has the Error body, as on the API's port.
 */
export function createMetricsServer (registry: MetricsSource, limits: MetricsListenerLimits = METRICS_LISTENER_LIMITS): Server {
  // Scrapes that come while a collection is under way share the next one, begun once it ends (so that
  // each counts what was done before it came): each collection cost a store query and 22 KB of text,
  // and many at once (a flood of them) held the event loop from the API for minutes.
  let collecting: Promise<string> | undefined
  let next: Promise<string> | undefined
  const collect = (): Promise<string> => {
    if (collecting === undefined) return (collecting = registry.metrics().finally(() => { collecting = undefined }))
    return (next ??= collecting.then(() => {}, () => {}).then(() => {
      next = undefined
      return collect()
    }))
  }
  const server = createServer({
    // A request without Host is refused below, in the Error shape, as on the API's port.
    requireHostHeader: false,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs / 4)
  }, (request, response) => {
    // Behind an answer not yet written (pipelined): refused, closing the connection after it, so that
    // the requests Node parsed with it cost nothing but a small answer each, never written.
    const refusal = response.socket === null ? ONE_AT_A_TIME : refusalOf(request)
    if (refusal !== undefined) {
      answerWithError(response, refusal, { close: true })
      return
    }
    if (pathOf(request.url!) !== '/metrics') {
      answerWithError(response, NOT_SERVED)
      return
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      answerWithError(response, methodNotAllowed(request.method!, ['GET', 'HEAD']))
      return
    }
    collect().then((text) => {
      response.writeHead(200, { ...SECURITY_HEADERS, 'content-type': registry.contentType }).end(text)
    }, (error: unknown) => {
      answerWithError(response, error instanceof ApiError ? error : NOT_COLLECTED)
    })
  })
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => { answerClientError(error, socket, NOT_COUNTED) })
  server.on('connect', (request: IncomingMessage, socket: Socket) => { answerConnect(request, socket, NOT_COUNTED) })
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => { answerUnmetExpectation(request, response, NOT_COUNTED) })
  // A request is refused with its body unread (see refusalOf): 100 Continue only to one without a body.
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (!expectsOnlyContinue(request)) {
      answerUnmetExpectation(request, response, NOT_COUNTED)
      return
    }
    if (refusalOf(request) === undefined) response.writeContinue()
    server.emit('request', request, response)
  })
  server.maxConnections = limits.maxConnections
  boundLingeringClose(server, limits.lingerMs)
  return server
}

/**
 * The path of a request target in origin form (`/metrics?…`) or absolute form (`http://host/metrics`),
 * which a server must take too (RFC 9112, section 3.2.2); undefined for one that is neither.
 */
function pathOf (target: string): string | undefined {
  try {
    return new URL(target, 'http://localhost').pathname
  } catch {
    return undefined
  }
}

const NOT_SERVED = new ApiError(404, 'not_found', 'Only /metrics is served here, to GET and HEAD')
const NOT_COLLECTED = new ApiError(500, 'internal_error', 'Metrics could not be collected')
const NO_BODY = new ApiError(400, 'bad_request', 'The metrics listener takes no body: send GET /metrics without Content-Length or Transfer-Encoding')
const ONE_AT_A_TIME = new ApiError(400, 'bad_request', 'The metrics listener takes one request at a time on a connection: send the next once the answer before it has come')

/**
 * What the API's port refuses in a request's head and matters here: an HTTP/1.1 request without Host,
 * and another HTTP version, which Node served as HTTP/1.1. And any body: none is read here, where Node
 * read and dropped it whole, however long (a Transfer-Encoding that is empty, it takes for no body and
 * the body for a next request). The answer closes the connection.
 */
function refusalOf (request: IncomingMessage): ApiError | undefined {
  const otherVersion = otherHttpVersion(request)
  if (otherVersion !== undefined) return otherVersion
  if (request.httpVersionMinor === 1 && request.headers.host === undefined) return HOST_REQUIRED
  return announcesBody(request) ? NO_BODY : undefined
}
