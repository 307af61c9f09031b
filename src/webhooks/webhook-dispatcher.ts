import { randomUUID } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { findEvent, findEvents, findLastEventId, type StoredEvent } from '../events/event.repository.js'
import type { EventType } from '../events/event.schemas.js'
import { retryDelay } from './retry-schedule.js'
import type { WebhookMetrics } from './webhook-metrics.js'
import { messageIdOf, signDelivery } from './webhook-signature.js'
import type { DeliveryAnswer, WebhookTransport } from './webhook-transport.js'
import {
  anyEnabledWebhook, completeRedelivery, findDeliveryTarget, leaseDueWebhooks, leaseRedeliveries, nextAttemptNumber, readLeasedWebhook, recordAttempt, renewLease,
  releaseWebhook, type AfterAttempt, type AttemptRecord, type LeasedRedelivery, type LeasedWebhook, type Recorded
} from './webhook-queue.js'

/** A receiver's answer, and when (by the service's clock) it was asked. */
type Attempt = DeliveryAnswer & { startedAt: number }

/** A lease a worker holds, and when it last pushed its end back. */
interface HeldLease {
  token: string
  renewedAt: number
}

export interface WebhookDispatcherOptions {
  /** How often the store is asked for subscriptions with events due. */
  pollMs: number
  /** Deliveries in flight at once on this instance; each subscription has at most one. */
  concurrency: number
  /** How long a subscription stays leased without news from its instance (longer than an attempt's timeout). */
  leaseMs: number
  /** Waits before each retry (see parseRetrySchedule). */
  retrySchedule: readonly number[]
  /** The store's installation id, which every `webhook-id` starts with (see messageIdOf). */
  installationId: string
}

// A lease older than this is renewed before an attempt, which with its guard lasts 11 s at most
// (the lease is 15 s).
const RENEW_AFTER_MS = 2000
// The longest a subscription keeps a slot while others may wait (see #deliverAll).
const TURN_MS = 2000
// A wake-up looks for work at most this often, however many changes are committed meanwhile.
const WAKE_MS = 20
// Events read at a time; the subscription is read again before each batch, so a change of its URL,
// types or secret applies within this many deliveries.
const BATCH = 20

/**
 * Delivers events to subscriptions from the store, where the queue is: each subscription's position
 * in the event log. An instance leases a due subscription, POSTs its events in order one at a time,
 * and moves its position on after each 2xx, in the transaction that logs the attempt; a failure
 * schedules a retry and gives the lease up. A crash loses nothing: a lease runs out and the event in
 * flight is sent again, with the same `webhook-id`.
 */
export class WebhookDispatcher {
  readonly #working = new Set<Promise<void>>()
  readonly #closing = new AbortController()
  #timer: NodeJS.Timeout | undefined
  #wakeTimer: NodeJS.Timeout | undefined
  #lastPoll = 0
  // Whether any subscription was enabled at the last tick: without one, a wake-up has nothing to do.
  #anyEnabled = false
  #leasing: Promise<void> | undefined
  #redelivering = 0

  constructor (
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly transport: WebhookTransport,
    private readonly options: WebhookDispatcherOptions,
    private readonly metrics: WebhookMetrics,
    private readonly onError: (error: Error) => void
  ) {
    // Each delivery awaiting its answer listens for the shutdown, and up to `concurrency` do: Node's
    // default of 10 would warn of a leak past it.
    setMaxListeners(options.concurrency, this.#closing.signal)
  }

  start (): void {
    this.#timer = setInterval(() => {
      anyEnabledWebhook(this.db).then((any) => { this.#anyEnabled = any }, this.onError)
      this.#poll()
    }, this.options.pollMs).unref()
  }

  /**
   * A change was committed on this instance: work is looked for now rather than at the next tick (at
   * most every 20 ms, and only while a subscription is enabled), so its events leave at once. Changes
   * on other instances wait for the tick.
   */
  wake (): void {
    if (this.#wakeTimer !== undefined || !this.#anyEnabled) return
    this.#wakeTimer = setTimeout(() => {
      this.#wakeTimer = undefined
      this.#poll()
    }, Math.max(0, this.#lastPoll + WAKE_MS - performance.now()))
  }

  /** Stops taking work and aborts the deliveries in flight; their subscriptions are released to be sent again. */
  async stop (): Promise<void> {
    clearInterval(this.#timer)
    clearTimeout(this.#wakeTimer)
    this.#closing.abort()
    await this.#leasing
    while (this.#working.size > 0) await Promise.allSettled([...this.#working])
    this.transport.close()
  }

  #poll (): void {
    if (this.#leasing !== undefined || this.#closing.signal.aborted) return
    this.#lastPoll = performance.now()
    this.#leasing = this.#leaseWork().catch(this.onError).finally(() => { this.#leasing = undefined })
  }

  async #leaseWork (): Promise<void> {
    const free = this.options.concurrency - this.#working.size
    if (free <= 0) return
    const now = this.#now()
    const leaseUntil = this.#later(this.options.leaseMs)
    // Asked-for retries take a quarter of the slots at most: however many are queued, the
    // subscriptions' own deliveries keep the rest.
    const redeliverySlots = Math.max(1, Math.floor(this.options.concurrency / 4)) - this.#redelivering
    if (redeliverySlots > 0) {
      for (const redelivery of await leaseRedeliveries(this.db, { now, leaseUntil, limit: Math.min(free, redeliverySlots) })) {
        this.#redelivering++
        this.#track(this.#redeliver(redelivery).finally(() => { this.#redelivering-- }))
      }
    }
    const stillFree = this.options.concurrency - this.#working.size
    if (stillFree <= 0) return
    // A token of each lease's own, not of the instance: a worker that outlived its lease (a frozen
    // process) must not pass for the one this instance may since have taken again.
    const leaseToken = randomUUID()
    for (const id of await leaseDueWebhooks(this.db, { now, leaseUntil, leaseToken, limit: stillFree })) {
      this.#track(this.#deliverAll(id, leaseToken))
    }
  }

  #track (work: Promise<void>): void {
    const tracked = work.catch(this.onError).finally(() => {
      this.#working.delete(tracked)
      // A slot is free: more may be due without waiting for the next tick.
      this.#poll()
    })
    this.#working.add(tracked)
  }

  /**
   * Delivers a leased subscription's events in order while they succeed, a batch at a time, for a
   * turn of 2 s at most (its last attempt may run past it), then gives the lease up: a subscription
   * with a backlog behind a slow receiver takes its turn with the others instead of keeping a slot.
   */
  async #deliverAll (id: bigint, leaseToken: string): Promise<void> {
    const turnEnds = performance.now() + TURN_MS
    const lease: HeldLease = { token: leaseToken, renewedAt: performance.now() }
    for (;;) {
      const webhook = await readLeasedWebhook(this.db, id, leaseToken, this.#now())
      if (webhook === undefined) return await releaseWebhook(this.db, id, leaseToken)
      // Read first: ids commit in order, so every event up to it is in the batch or not of the subscription's types.
      const last = await findLastEventId(this.db)
      const types = webhook.eventTypes === '*' ? undefined : webhook.eventTypes.split(' ') as EventType[]
      const { events, more } = await findEvents(this.db, { afterId: webhook.deliveredThrough, types, limit: BATCH })
      const inReach = events.filter((event) => event.id <= last)
      if (!await this.#deliverBatch(webhook, lease, inReach, (index) => performance.now() > turnEnds && (more || index < inReach.length - 1))) return
      if (!more || inReach.length < events.length) return await releaseWebhook(this.db, id, leaseToken, { deliveredThrough: last })
    }
  }

  /**
   * Sends events in order, each once the one before succeeded, and records each attempt. A record is
   * written while the next event is on its way, so that a delivery takes the longer of its POST and
   * its record rather than both (docs/benchmarks.md); records are still written one at a time and in
   * order, and the last is written before this returns. True when every event was delivered and the
   * lease is still held; false once the lease is given up (or lost): after a failure, a PATCH that
   * disabled the subscription, a shutdown, or at the end of the subscription's turn.
   */
  async #deliverBatch (webhook: LeasedWebhook, lease: HeldLease, events: readonly StoredEvent[], turnOver: (index: number) => boolean): Promise<boolean> {
    let recording: Promise<Recorded> = Promise.resolve({ held: true, goOn: true })
    for (const [index, event] of events.entries()) {
      // Reading the store may have taken a while: the lease must outlast the attempt, or another
      // instance could send the same event beside it. The record under way may extend it first.
      if (performance.now() - lease.renewedAt > RENEW_AFTER_MS) {
        if (!await this.#settle(webhook.id, lease, recording)) return false
        if (performance.now() - lease.renewedAt > RENEW_AFTER_MS) {
          if (!await renewLease(this.db, webhook.id, lease.token, this.#later(this.options.leaseMs))) return false
          lease.renewedAt = performance.now()
        }
      }
      const attempt = index === 0 ? webhook.attempt + 1 : 1
      const answer = await this.#post(webhook.url, webhook.secrets, messageIdOf(this.options.installationId, webhook.id, event.id), event.json)
      const before = await recording
      // A lost lease: the attempt cannot be recorded, and the instance that holds the lease now
      // sends the event again. A shutdown aborted the attempt: it is sent again once released.
      if (!before.held) return false
      if (answer === undefined) return await this.#release(webhook.id, lease)
      recording = this.#recordAttempt(webhook.id, lease, event, attempt, answer)
      // Awaited below: a failure is thrown there, not left unhandled meanwhile.
      recording.catch(() => {})
      // A failure (its record schedules the retry, or disables the subscription), or a PATCH that
      // disabled the subscription while the event before was on its way and let this one go as
      // well: recorded, and the rest waits.
      if (!before.goOn || answer.error !== undefined) {
        await recording
        return await this.#release(webhook.id, lease)
      }
      if (turnOver(index)) {
        if (await this.#settle(webhook.id, lease, recording)) await releaseWebhook(this.db, webhook.id, lease.token, { dueAt: this.#now() })
        return false
      }
    }
    return await this.#settle(webhook.id, lease, recording)
  }

  /** Logs an attempt and its outcome, if the lease is still held (which a delivery's record extends). */
  async #recordAttempt (webhookId: bigint, lease: HeldLease, event: StoredEvent, attempt: number, answer: Attempt): Promise<Recorded> {
    const recorded = await recordAttempt(this.db, webhookId, lease.token, this.#record(event.id, attempt, answer), this.#after(answer, event.id, attempt))
    this.metrics.attempted(answer, this.clock.now(), event.occurredAt)
    lease.renewedAt = performance.now()
    return recorded
  }

  /** Waits for a record; true when delivering goes on, and otherwise the lease is given up if still held. */
  async #settle (webhookId: bigint, lease: HeldLease, recording: Promise<Recorded>): Promise<boolean> {
    const { held, goOn } = await recording
    if (held && !goOn) await this.#release(webhookId, lease)
    return goOn
  }

  async #release (webhookId: bigint, lease: HeldLease): Promise<false> {
    await releaseWebhook(this.db, webhookId, lease.token)
    return false
  }

  #after (answer: DeliveryAnswer, eventId: bigint, attempt: number): AfterAttempt {
    if (answer.error === undefined) return { kind: 'delivered', leaseUntil: this.#later(this.options.leaseMs) }
    if (answer.status === 410) return { kind: 'disable', reason: 'The receiver answered 410 Gone' }
    const wait = retryDelay(this.options.retrySchedule, attempt)
    if (wait === undefined) return { kind: 'disable', reason: `All ${attempt} attempts at event ${eventId} failed; the last: ${answer.error}` }
    return { kind: 'retry', nextAttemptAt: this.#later(wait) }
  }

  async #redeliver (redelivery: LeasedRedelivery): Promise<void> {
    const target = await findDeliveryTarget(this.db, redelivery.webhookId, this.#now())
    const event = await findEvent(this.db, redelivery.eventId)
    // The subscription was deleted, or the event is no longer kept (the retry was accepted before it went).
    if (target === undefined || event === undefined) return await completeRedelivery(this.db, redelivery, undefined)
    const answer = await this.#post(target.url, target.secrets, messageIdOf(this.options.installationId, redelivery.webhookId, event.id), event.json)
    // A shutdown: the redelivery stays queued, and is leased again when its lease runs out.
    if (answer === undefined) return
    const attempt = await nextAttemptNumber(this.db, redelivery.webhookId, event.id)
    await completeRedelivery(this.db, redelivery, this.#record(event.id, attempt, answer))
    this.metrics.attempted(answer, this.clock.now())
  }

  /** The receiver's answer and when it was asked, or undefined when a shutdown aborted the attempt. */
  async #post (url: string, secrets: readonly string[], messageId: string, body: string): Promise<Attempt | undefined> {
    const startedAt = this.clock.now()
    const headers = signDelivery(secrets, messageId, new Date(startedAt), body)
    const answer = await this.transport.post(new URL(url), { ...headers }, body, this.#closing.signal)
    return this.#closing.signal.aborted ? undefined : { ...answer, startedAt }
  }

  #record (eventId: bigint, attempt: number, answer: Attempt): AttemptRecord {
    return {
      eventId,
      attempt,
      attemptedAt: new Date(answer.startedAt).toISOString(),
      responseStatus: answer.status ?? null,
      error: answer.error ?? null,
      durationMs: answer.durationMs
    }
  }

  #now (): string {
    return new Date(this.clock.now()).toISOString()
  }

  #later (ms: number): string {
    return new Date(this.clock.now() + ms).toISOString()
  }
}
