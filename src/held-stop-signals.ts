/** The signals that stop the service. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const

export interface HeldStopSignals {
  /** Stops holding; the signal held, if one came, which the caller sends again once its own handlers are in place. */
  release: () => NodeJS.Signals | undefined
}

/**
 * Holds a SIGINT or SIGTERM that comes while the service starts (opening and migrating the store,
 * building the app), before its shutdown can run: Node's default would end the process at once, with
 * no line in the log and code 143. Repeats are one signal while held (a sender may signal the process
 * and its group), and start-up is bounded by the store's deadlines, so the stop waits for it.
 */
export function holdStopSignals (): HeldStopSignals {
  let held: NodeJS.Signals | undefined
  const hold = (signal: NodeJS.Signals) => { held ??= signal }
  for (const signal of STOP_SIGNALS) process.on(signal, hold)
  return {
    release: () => {
      for (const signal of STOP_SIGNALS) process.off(signal, hold)
      return held
    }
  }
}

/** Sends `signal` to this process again, for the handlers installed since it was held. */
export function resend (signal: NodeJS.Signals | undefined): void {
  if (signal !== undefined) process.kill(process.pid, signal)
}
