import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'
import { pino, type Logger } from 'pino'
import { prettyFactory } from 'pino-pretty'
import { logDestination } from './log-destination.js'
import { REDACTED, withoutSecrets } from './without-secrets.js'

/** How log lines are written: `auto` is `pretty` on a terminal, `json` otherwise. */
export type LogFormat = 'auto' | 'json' | 'pretty'

// A request's own line, in the human format: "GET /v1/pets 200 1.4 ms".
const REQUEST_FIELDS = ['method', 'url', 'statusCode', 'ms']

/**
 * The service's logger: JSON lines on stdout (or `stream`), or lines a person reads on a terminal.
 * Fastify logs no request headers, but should a serializer ever add them, credentials are censored
 * rather than written, as are the arguments of a failed Redis command; and a key or webhook secret
 * anywhere in a line (a URL's `?api_key=`, which the classic Petstore took) is redacted as the line
 * is written.
 */
export function createLogger (level: string, format: LogFormat = 'json', stream?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    redact: {
      // ioredis's errors hold the command that failed with its arguments: AUTH's are the password. A
      // request's Host (in its debug line) may hold a user and password before an @, as a URL's authority does.
      paths: ['req.headers.authorization', 'req.headers["idempotency-key"]', 'headers.authorization', 'err.command.args', 'req.host', 'req.headers.host'],
      censor: (value: unknown, path: string[]) => path.at(-1) !== 'host' ? REDACTED : typeof value === 'string' ? withoutUserInfo(value) : value
    },
    hooks: { streamWrite: withoutSecrets }
  }
  if (format === 'pretty' || (format === 'auto' && process.stdout.isTTY)) {
    const destination = stream ?? logDestination()
    const prettify = prettyFactory({
      colorize: stream === undefined && process.stdout.isTTY,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: ['pid', 'hostname', 'reqId', ...REQUEST_FIELDS].join(','),
      messageFormat: (log, messageKey) => log.method === undefined ?
          String(log[messageKey]) :
        `${String(log.method)} ${String(log.url)} ${String(log.statusCode)} ${String(log.ms)} ms`
    })
    // Each line written as it is logged, as a JSON line is: pino-pretty's own stream waited whenever
    // the destination was behind (a paused terminal), its lines piling up in memory without bound
    // instead of held up to LOG_HELD_BYTES, and it closed the destination at its first failed write.
    return pino(options, { write: (line: string) => { destination.write(prettify(line)) } })
  }
  return pino(options, stream ?? logDestination())
}

/** A host as a request's `Host` names it, without what comes before an `@` (a user and a password). */
function withoutUserInfo (host: string): string {
  const at = host.lastIndexOf('@')
  return at === -1 ? host : `${REDACTED}${host.slice(at)}`
}

/** Whether requests get a line each: `auto` is on where a person watches, a terminal. */
export function logsEachRequest (setting: 'auto' | 'on' | 'off'): boolean {
  return setting === 'on' || (setting === 'auto' && process.stdout.isTTY === true)
}

/**
 * Logs one line per request when `linePerRequest` (method, path, status, duration; at info), else at
 * debug only: at info, a busy instance spent about a tenth of its time writing Fastify's two lines per
 * request. Failures are logged at error either way.
 */
export class RequestLog extends LogController {
  constructor (private readonly linePerRequest: boolean) {
    super()
  }

  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored')
    else if (this.linePerRequest) reply.log.info({ method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 }, 'request completed')
    else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed')
  }
}
