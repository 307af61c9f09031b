/**
 * The signals that stop the service: SIGTERM and SIGINT, and those close-with-grace (one process's
 * shutdown) also takes as a stop, which a primary of workers died of at once.
 */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'] as const

/**
 * The signals of a fault (a crash in native code, an abort), which close-with-grace would also take
 * as a stop: a handler in JavaScript returns to the faulting instruction, which faults again, for
 * good. Node's own exit faults so when the terminal it ran on has gone (a dropped ssh session): the
 * process spun at a full core instead of ending.
 */
export const FAULT_SIGNALS = ['SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGSEGV'] as const

export interface HeldStopSignals {
  /** Stops holding; the signal held, if one came, which the caller sends again once its own handlers are in place. */
  release: () => NodeJS.Signals | undefined
}

/** Copies of one signal, sent to the process and to its group (`timeout(1)` sends both), come this close after the first is handled. */
const COPIES_MS = 100

/**
 * Holds a stop signal that comes while the service starts (opening and migrating the store,
 * building the app), before its shutdown can run: Node's default would end the process at once, with
 * no line in the log and code 143. Start-up is bounded by the store's deadlines, so the stop waits for
 * it, and `onHeld` says so; a second signal calls `onSecond`, as one does while the service stops (copies
 * of the first are the same signal: see onStopSignals).
 */
export function holdStopSignals (onHeld: (signal: NodeJS.Signals) => void, onSecond: (signal: NodeJS.Signals) => void): HeldStopSignals {
  let held: NodeJS.Signals | undefined
  const stopListening = onStopSignals((signal) => {
    held = signal
    onHeld(signal)
  }, onSecond)
  return {
    release: () => {
      stopListening()
      return held
    }
  }
}

/**
 * Calls `first` on the first stop signal and `second` on each later one, but for copies of the first
 * (within COPIES_MS): `npm start` sends its own copy of a Ctrl-C or SIGTERM that reached the whole
 * group, and a single process took it for a second signal, exiting without the requests in flight.
 * Returns what stops listening.
 */
export function onStopSignals (first: (signal: NodeJS.Signals) => void, second: (signal: NodeJS.Signals) => void): () => void {
  let firstAt: number | undefined
  const listener = (signal: NodeJS.Signals) => {
    if (firstAt === undefined) {
      first(signal)
      // Timed from the end of `first`: a copy that came while it ran is only handled after it, and on a
      // loaded machine its synchronous work (a log line, the workers told to stop) took past COPIES_MS.
      firstAt = performance.now()
    } else if (performance.now() - firstAt > COPIES_MS) {
      second(signal)
    }
  }
  for (const signal of STOP_SIGNALS) process.on(signal, listener)
  return () => { for (const signal of STOP_SIGNALS) process.off(signal, listener) }
}

/** Sends `signal` to this process again, for the handlers installed since it was held. */
export function resend (signal: NodeJS.Signals | undefined): void {
  if (signal !== undefined) process.kill(process.pid, signal)
}
