import fs, { constants, openSync, writeSync } from 'node:fs'
import { isatty } from 'node:tty'
import sonicBoom, { type SonicBoom } from 'sonic-boom'

// A CommonJS package: its class is a property of its `module.exports`, which Node gives ESM as the default.
const { SonicBoom: SonicBoomStream } = sonicBoom

/** What a log that cannot be written holds, to write once it can; past it, lines are dropped. */
export const LOG_HELD_BYTES = 1024 * 1024
/**
 * The most a write takes (sonic-boom's default is 16 KiB), made of whole lines: Linux's PIPE_BUF,
 * which a pipe takes whole or not at all, where a longer write is cut where the pipe is full, and the
 * workers of WEB_CONCURRENCY, which share stdout, wrote their lines into one another's. (A line longer
 * than this is written alone, and may still be cut; so may a write to a terminal or a socket.)
 */
const MAX_WRITE_BYTES = 4096
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
  const destination = new SonicBoomStream({ fd: withoutWaiting(fd), maxLength: LOG_HELD_BYTES, maxWrite: MAX_WRITE_BYTES, retryEAGAIN: () => performance.now() < exitDeadline })
  let failing = false
  process.on('exit', () => {
    exitDeadline = performance.now() + EXIT_FLUSH_MS
    flushAtExit(destination)
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
  destination.on('drop', () => {
    dropped++
    // sonic-boom tries no write for a line it drops: a log that failed until it held its most was
    // never tried again, even once it could be written. An empty line tries again what it holds.
    if (failing) destination.write('')
  })
  return destination
}

/**
 * A terminal's descriptor opened again, its writes failing with EAGAIN where they would wait: those
 * to a terminal whose output is paused (Ctrl-S, an ssh session that stalls) waited for good, on a
 * thread of Node's pool or in the exit's flush, and the exit waits for the pool's threads: the
 * service ignored SIGTERM. A file of its own, as libuv opens one for process.stdout: the flag set on
 * the descriptor given would be set for every process that shares the terminal (the shell, say).
 */
function withoutWaiting (fd: number): number {
  if (!isatty(fd)) return fd // a pipe's writes wait no more: Node made it non-blocking as the CLI opened process.stdout
  try {
    return openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch {
    return fd // not Linux's /proc: as before
  }
}

/**
 * Writes what the log holds at exit, with sonic-boom's flushSync, but ends at a failed write:
 * flushSync retries every error but EAGAIN and EBUSY every 100 ms without end, so a log that could
 * not be written as the process exited, before an earlier write's error was reported (a terminal gone:
 * EIO; a full disk, a reader gone), kept the process from ending, for good. fs.writeSync is how
 * flushSync writes: it is wrapped for this one call, while nothing else runs, to drop what it could
 * not write.
 */
function flushAtExit (destination: SonicBoom): void {
  const { writeSync: write } = fs
  let lost: NodeJS.ErrnoException | undefined
  fs.writeSync = ((fd: number, data: string | NodeJS.ArrayBufferView, ...rest: unknown[]) => {
    try {
      if (lost === undefined) return (write as (...args: unknown[]) => number)(fd, data, ...rest)
    } catch (error) {
      const { code } = error as NodeJS.ErrnoException
      if (code === 'EAGAIN' || code === 'EBUSY') throw error // retried while EXIT_FLUSH_MS lasts
      lost = error as NodeJS.ErrnoException
    }
    return typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength
  }) as typeof fs.writeSync
  try {
    destination.flushSync()
  } catch {
    // what is left is lost with the process, as it would be on a crash
  } finally {
    fs.writeSync = write
  }
  if (lost !== undefined) tellStderr(`the log cannot be written (${lost.code ?? lost.message}) as the process exits: its last lines are lost`)
}

function tellStderr (message: string): void {
  try {
    writeSync(2, `petstore: ${message}\n`)
  } catch {
    // stderr fails too: there is no one left to tell
  }
}
