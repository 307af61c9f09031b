import type { FastifyBaseLogger } from 'fastify'

/** How often an outage's failures are counted in the log. */
export const OUTAGE_REPORT_INTERVAL_MS = 10_000

/**
 * Logs a run of failures of one kind (a store that is down, an overload) as an operator can read it,
 * instead of a stack per request or per retry: the first failure with its cause and what it leads to
 * (`consequence`: "answering 503"), then each interval how many followed, then the first interval
 * with none, as the recovery.
 */
export class OutageLog {
  /** The failures of each kind under way since its last report. */
  readonly #counts = new Map<string, number>()
  /**
   * For each kind, the report by which it has been watched for a whole interval; only a later report
   * may declare it recovered (one first seen while the timer runs for another has not, at the next).
   */
  readonly #watchedFrom = new Map<string, number>()
  #reports = 0
  #timer: NodeJS.Timeout | undefined

  constructor (private readonly log: FastifyBaseLogger, private readonly consequence: string, private readonly intervalMs = OUTAGE_REPORT_INTERVAL_MS) {}

  /** `cause` is the failure's error, if it has one (a refusal of the service's own, such as overload, has none). */
  failed (kind: string, cause?: unknown, level: 'error' | 'info' = 'error'): void {
    const count = this.#counts.get(kind)
    if (count !== undefined) {
      this.#counts.set(kind, count + 1)
      return
    }
    this.#counts.set(kind, 0)
    this.#watchedFrom.set(kind, this.#timer === undefined ? this.#reports : this.#reports + 1)
    this.log[level](cause === undefined ? { kind } : { err: cause, kind }, `${kind}: ${this.consequence} (further failures of this kind are counted every ${this.#seconds} s)`)
    this.#timer ??= setInterval(() => { this.#report() }, this.intervalMs).unref()
  }

  /** Stops counting; failures not yet reported are, so that none goes unlogged at shutdown. */
  close (): void {
    for (const [kind, failures] of this.#counts) if (failures > 0) this.#reportCount(kind, failures)
    this.#counts.clear()
    this.#watchedFrom.clear()
    this.#stopTimer()
  }

  #report (): void {
    this.#reports++
    for (const [kind, failures] of this.#counts) {
      if (failures > 0) {
        this.#reportCount(kind, failures)
        this.#counts.set(kind, 0)
      } else if (this.#watchedFrom.get(kind)! < this.#reports) {
        this.log.info({ kind }, `${kind}: recovered (no failure of this kind in the last ${this.#seconds} s)`)
        this.#counts.delete(kind)
        this.#watchedFrom.delete(kind)
      }
    }
    if (this.#counts.size === 0) this.#stopTimer()
  }

  #reportCount (kind: string, failures: number): void {
    this.log.warn({ kind, failures }, `${kind}: ${failures} more failures since the last line`)
  }

  #stopTimer (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  get #seconds (): number {
    return this.intervalMs / 1000
  }
}
