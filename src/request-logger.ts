import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString } from 'pino'

/**
 * Fastify's `childLoggerFactory`: each request's logger, bound to its request id as pino's child
 * would be, but made into that child only when the request writes a line at a level that is enabled.
 * Most requests write none (their two lines are at debug, see RequestLog), and pino's `child()`,
 * which serializes the bindings to JSON, cost 0.7 µs of every request for lines it never wrote
 * (docs/benchmarks.md).
 */
export function requestLoggerFactory (logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, options)
}

class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined
  readonly #parent: FastifyBaseLogger
  readonly #bindings: Bindings
  readonly #options: ChildLoggerOptions

  constructor (parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  get level (): LevelWithSilentOrString {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level
  }

  set level (level: LevelWithSilentOrString) {
    this.#logger().level = level
  }

  fatal (...line: LogLine): void { this.#write('fatal', line) }
  error (...line: LogLine): void { this.#write('error', line) }
  warn (...line: LogLine): void { this.#write('warn', line) }
  info (...line: LogLine): void { this.#write('info', line) }
  debug (...line: LogLine): void { this.#write('debug', line) }
  trace (...line: LogLine): void { this.#write('trace', line) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options)
  }

  #write (level: Level, line: LogLine): void {
    // The parent's own check, unless this route logs at a level of its own (Fastify's `logLevel`).
    if (this.#child === undefined && this.#options.level === undefined && !isLevelEnabled(this.#parent, level)) return
    const logger = this.#logger()
    const write: (...line: LogLine) => void = logger[level]
    write.apply(logger, line)
  }

  #logger (): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options)
    return this.#child
  }
}

type LogLine = [unknown, string?, ...unknown[]]

/** pino's `isLevelEnabled`, where the parent has it (a Fastify logger need not). */
function isLevelEnabled (logger: FastifyBaseLogger, level: Level): boolean {
  const check = (logger as { isLevelEnabled?: (level: Level) => boolean }).isLevelEnabled
  return check === undefined ? true : check.call(logger, level)
}
