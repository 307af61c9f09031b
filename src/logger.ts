import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import { pino, type Logger } from 'pino'

/**
 * The service's logger: JSON lines on stdout (or `stream`). Fastify logs no request headers, but
 * should a serializer ever add them, credentials are censored rather than written.
 */
export function createLogger (level: string, stream?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["idempotency-key"]', 'headers.authorization'],
      censor: '[redacted]'
    }
  }
  return stream === undefined ? pino(options) : pino(options, stream)
}

/**
 * Logs each request's lines at debug rather than info (failures stay at error): at info, a busy
 * instance spent about a tenth of its time writing two lines per request.
 */
export class RequestLogAtDebug extends LogController {
  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, _request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored')
    else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed')
  }
}
