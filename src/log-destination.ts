import { writeSync } from 'node:fs'
import sonicBoom, { type SonicBoom } from 'sonic-boom'

// A CommonJS package: its class is a property of its `module.exports`, which Node gives ESM as the default.
const { SonicBoom: SonicBoomStream } = sonicBoom

/** What a log that cannot be written holds, to write once it can; past it, lines are dropped. */
export const LOG_HELD_BYTES = 1024 * 1024
/** The longest wait at exit for a log whose reader does not read what is left. */
const EXIT_FLUSH_MS = 1000

/**
 * The log's destination: stdout, written as pino's own is (sonic-boom, asynchronously, what is left
 * written at exit), but a write that fails (a full disk, a file system gone read-only) costs log
 * lines, never the service. pino's own destination rethrew the failure, an uncaught error that stopped
 * the service, whose exit then spun forever retrying the write (sonic-boom's `flushSync` retries every
 * error), deaf to SIGTERM. Here the lines are held, up to LOG_HELD_BYTES, then dropped, and each write
 * tries again; stderr says when the log fails and when it is written again, with the count of the
 * lines dropped; and at exit, what is left is written only while the log can be.
 */
export function logDestination (fd = 1): SonicBoom {
  // A reader that stops reading (a pipe left full) makes writes fail with EAGAIN: retried without end
  // while the service runs (the lines held meanwhile), and for EXIT_FLUSH_MS at exit, which otherwise
  // retried them forever: the process never exited, deaf to SIGTERM.
  let exitDeadline = Infinity
  const destination = new SonicBoomStream({ fd, maxLength: LOG_HELD_BYTES, retryEAGAIN: () => performance.now() < exitDeadline })
  let failing = false
  process.on('exit', () => {
    if (failing) return
    exitDeadline = performance.now() + EXIT_FLUSH_MS
    try {
      destination.flushSync()
    } catch {
      // what is left is lost with the process, as it would be on a crash
    }
  })
  let dropped = 0
  const recovered = () => {
    failing = false
    tellStderr(`the log is written again; ${dropped} line${dropped === 1 ? ' was' : 's were'} dropped meanwhile`)
    dropped = 0
  }
  destination.on('error', (error: NodeJS.ErrnoException) => {
    if (failing) return
    failing = true
    tellStderr(`the log cannot be written (${error.code ?? error.message}): its lines are held, up to ${LOG_HELD_BYTES / 1024 / 1024} MiB, then dropped, until it can be`)
    // Listened for only while failing: a write is made for every line.
    destination.once('write', recovered)
  })
  destination.on('drop', () => { dropped++ })
  return destination
}

function tellStderr (message: string): void {
  try {
    writeSync(2, `petstore: ${message}\n`)
  } catch {
    // stderr fails too: there is no one left to tell
  }
}
