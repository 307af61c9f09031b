import type { Logger } from 'pino'

/**
 * Logs the process's warnings (a deprecation, pg's notice on a URL's `sslmode`) as lines of the
 * service's log, at warn, instead of Node's own: several lines on stderr, which a collector of JSON
 * lines would read as that many broken ones.
 */
export function logProcessWarnings (logger: Logger): void {
  process.removeAllListeners('warning')
  process.on('warning', ({ name, message, code }: Error & { code?: string }) => {
    logger.warn({ warning: { name, ...(code === undefined ? {} : { code }) } }, message)
  })
}
