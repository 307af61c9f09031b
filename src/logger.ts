import type { FastifyServerOptions } from 'fastify'

/**
 * The service's pino options. Fastify logs no request headers, but should a serializer ever add
 * them, credentials are censored rather than written.
 */
export function loggerOptions (level: string, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  return {
    level,
    ...(stream !== undefined && { stream }),
    redact: {
      paths: ['req.headers.authorization', 'req.headers["idempotency-key"]', 'headers.authorization'],
      censor: '[redacted]'
    }
  }
}
