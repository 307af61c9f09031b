import type { Logger } from 'pino'

/**
 * Logs the process's warnings (a deprecation, pg's notice on a URL's `sslmode`) as lines of the
 * service's log, at warn, instead of Node's own: several lines on stderr, which a collector of JSON
 * lines would read as that many broken ones. Node listens for them only when they are to be shown
 * (not under `--no-warnings` or `NODE_NO_WARNINGS=1`), and so does this.
 */
export function logProcessWarnings (logger: Logger): void {
  reportWarnings(({ name, message, code }) => { logger.warn({ warning: { name, ...(code === undefined ? {} : { code }) } }, message) })
}

/**
 * Prints the process's warnings on stderr as the `petstore` command's other messages are
 * (`petstore: warning: ...`), instead of Node's own lines, with its `(node:PID)` and its hint to rerun
 * with `--trace-warnings`. As above, only when Node would show them.
 */
export function printProcessWarnings (): void {
  reportWarnings(({ message }) => { console.error(`petstore: warning: ${message}`) })
}

/** Reports the warnings with `report` in place of whoever does now, if anyone does (see above). */
function reportWarnings (report: (warning: Error & { code?: string }) => void): void {
  if (process.listenerCount('warning') === 0) return
  process.removeAllListeners('warning')
  process.on('warning', report)
}
