import { createServer, type Server } from 'node:http'
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'

/** The service's Prometheus metrics; made only when METRICS_PORT is set. */
export interface Metrics {
  registry: Registry
  httpRequests: Counter<'method' | 'route' | 'status'>
  httpDuration: Histogram<'method' | 'route' | 'status'>
  storeDuration: Histogram<'operation' | 'outcome'>
}

export function createMetrics (): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  return {
    registry,
    httpRequests: new Counter({
      name: 'http_requests_total', help: 'Requests answered, by route and status', labelNames: ['method', 'route', 'status'], registers: [registry]
    }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from receiving a request to answering it',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry]
    }),
    storeDuration: new Histogram({
      name: 'petstore_store_operation_duration_seconds',
      help: 'Time the pet store took per operation (findPage, findById, create, insertMany), by outcome (ok or error)',
      labelNames: ['operation', 'outcome'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1],
      registers: [registry]
    })
  }
}

/** GET /metrics in the Prometheus text format, on its own port, apart from the API and its keys. */
export function createMetricsServer ({ registry }: Metrics): Server {
  return createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' })
      response.end('{"code":"not_found","message":"Only GET /metrics is served here","status":404}')
      return
    }
    registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': registry.contentType }).end(text)
    }, () => {
      response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' })
      response.end('{"code":"internal_error","message":"Metrics could not be collected","status":500}')
    })
  })
}
