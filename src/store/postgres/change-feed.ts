import { randomUUID } from 'node:crypto'
import type { Client } from 'pg'
import { ConfigError } from '../../config.js'
import { messageOf } from '../../error-message.js'
import type { StoreLog } from '../store.js'
import { isRefusedPostgresSetting, markConnectionRefused } from '../store-errors.js'
import { endWithin } from './bounded-end.js'

/** The channel a trigger on the pets table notifies on every change (migration 009). */
export const PET_CHANGES_CHANNEL = 'petstore_pet_changes'

export interface ChangeFeedOptions {
  /** A direct connection to PostgreSQL: LISTEN does not work through PgBouncer in transaction mode. */
  connectionString: string
  /**
   * Sends a notification on the channel through the connections the writes take (the probe of the
   * path), best in a transaction whose commit does not wait for the WAL flush (see NOTIFY_UNFLUSHED).
   */
  notify: (payload: string) => Promise<void>
  connectMs: number
  log: StoreLog
  /** The wait between a probe's return and the next while no read asks (see ACTIVE_MS). */
  heartbeatMs?: number
  /** How long a probe may take to come back before the feed counts as lost (and listens again). */
  probeMs?: number
  /** The first wait before connecting again after a loss; it doubles up to 30 s while connecting fails. */
  retryMs?: number
}

const MAX_RETRY_MS = 30_000
const NOT_HEARD = (ms: number) => `a notification sent the way the writes go did not come back to the listening connection within ${ms} ms ` +
  '(the store is slow or unreachable, or, if this goes on while it answers, DATABASE_DIRECT_URL does not name the same database as DATABASE_URL, directly, not through a pooler in transaction mode)'
const PROBE = 'probe '
/**
 * How long a probe's return vouches for the notifications: past this since the last probe heard back
 * was sent, the caches are bypassed (a connection that hangs: no answer, and no error either).
 */
const FRESH_MS = 75
/** The wait between a probe's return and the next while reads ask. */
const PROBE_GAP_MS = 20
/** Reads asked within this keep the probes PROBE_GAP_MS apart; past it, they wait `heartbeatMs`. */
const ACTIVE_MS = 1000
/**
 * A probe's statement, with the channel and the payload as $1 and $2. Its commit need not wait for the
 * WAL flush: the order of notifications is the order of commits, whether flushed or not, and a flush
 * costs the server more than the probe.
 */
export const NOTIFY_UNFLUSHED = "select set_config('synchronous_commit', 'off', true), pg_notify($1, $2)"

/**
 * What has changed in the pets table of a PostgreSQL store, for the read caches of an instance: a
 * version that moves with every commit of this instance (at once, see `changed`) and of any other
 * (when its notification arrives, within milliseconds), or undefined while the notifications might
 * be missed (not yet listening, connection lost), and then the caches are bypassed.
 *
 * While reads ask, the listening connection is probed every few tens of milliseconds with a
 * notification sent the way the writes go: PostgreSQL delivers notifications in the order of their
 * commits, so when a probe sent at t comes back, every commit made before t has been heard. Sent on the
 * listening connection itself, a probe came back even after the writes' pooler was re-pointed at
 * another database, whose commits the listener then never heard. Past FRESH_MS since the last
 * probe heard back was sent, the version is undefined: a connection that hangs without failing (a
 * frozen server or network) leaves no read older than that, however long it takes to count as lost.
 * Each probe is a transaction (it takes a transaction id): without reads they are `heartbeatMs` apart,
 * and the first read after a pause is answered from the database while a probe is made at once.
 *
 * Listening starts only when a cache first asks: the CLI and instances that never read pets keep no
 * connection for it. Through a pooler that cannot pass notifications (PgBouncer's transaction mode as
 * the listening connection), or a listener on another database than the writes, no probe comes back
 * and the caches stay off rather than stale.
 */
export class PostgresChangeFeed {
  #generation = 0
  #listening = false
  #started = false
  #closed = false
  #client: Client | undefined
  #timer: NodeJS.Timeout | undefined
  #retryMs: number
  /** When the notifications were lost (performance.now()), while they are not heard again. */
  #lostAt: number | undefined
  /** When the last probe that came back was sent (performance.now()): every commit before it is heard. */
  #heardUpTo = -Infinity
  /** When a read last asked for the version (performance.now()). */
  #askedAt = -Infinity
  #probing = false
  readonly #awaited = new Map<string, () => void>()
  readonly #heartbeatMs: number
  readonly #probeMs: number

  constructor (private readonly options: ChangeFeedOptions) {
    this.#retryMs = options.retryMs ?? 1000
    this.#heartbeatMs = options.heartbeatMs ?? 5000
    this.#probeMs = options.probeMs ?? 2000
  }

  /** What changes with every commit seen, or undefined while commits might go unseen. */
  version (): string | undefined {
    if (!this.#started) this.#start()
    const now = performance.now()
    this.#askedAt = now
    if (!this.#listening) return undefined
    if (now - this.#heardUpTo <= FRESH_MS) return String(this.#generation)
    // After a pause in the reads, the probe waiting for the heartbeat goes at once.
    if (!this.#probing && this.#client !== undefined) {
      clearTimeout(this.#timer)
      this.#probeListener(this.#client)
    }
    return undefined
  }

  /** A commit of this instance: its own reads see it at once, before the notification comes back. */
  changed (): void {
    this.#generation++
  }

  async close (): Promise<void> {
    this.#closed = true
    clearTimeout(this.#timer)
    if (this.#client !== undefined) await endWithin(this.#client, this.options.connectMs).catch(() => {})
  }

  #start (): void {
    this.#started = true
    this.#connect().catch((err: Error) => { this.#lost(this.#client, err) })
  }

  async #connect (): Promise<void> {
    const { default: pg } = await import('pg')
    const { connectionString, connectMs } = this.options
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: connectMs, query_timeout: this.#probeMs, keepAlive: true, application_name: 'petstore change feed' })
    this.#client = client
    client.on('notification', ({ payload = '' }) => {
      // A probe, this instance's or another's, is no change.
      if (payload.startsWith(PROBE)) this.#awaited.get(payload)?.()
      else this.#generation++
    })
    client.on('error', (err) => { this.#lost(client, err) })
    client.on('end', () => { this.#lost(client, new Error('the connection ended')) })
    await client.connect().catch((error: unknown) => { throw markConnectionRefused(error) })
    if (this.#closed) return await endWithin(client, connectMs)
    await client.query(`listen ${PET_CHANGES_CHANNEL}`)
    const heardUpTo = await this.#probe()
    if (client !== this.#client || this.#closed) return // lost, or closed, meanwhile
    this.#heardUpTo = heardUpTo
    this.#listening = true
    this.#retryMs = this.options.retryMs ?? 1000
    this.#generation++
    if (this.#lostAt !== undefined) {
      const seconds = ((performance.now() - this.#lostAt) / 1000).toFixed(1)
      this.options.log.info({ unheardSeconds: Number(seconds) }, `the change notifications of PostgreSQL are heard again after ${seconds} s: reads are served from memory again`)
      this.#lostAt = undefined
    }
    this.#heartbeat(client)
  }

  /** The next probe of the listening connection: soon while reads ask, else after `heartbeatMs`. */
  #heartbeat (client: Client): void {
    const reading = performance.now() - this.#askedAt < ACTIVE_MS
    this.#timer = setTimeout(() => { this.#probeListener(client) }, reading ? PROBE_GAP_MS : this.#heartbeatMs).unref()
  }

  /** Checks that a probe comes back to the listening connection, then schedules the next check. */
  #probeListener (client: Client): void {
    this.#probing = true
    this.#probe()
      .then((sentAt) => {
        this.#probing = false
        if (client !== this.#client || this.#closed) return // lost, or closed, meanwhile: that path goes on
        this.#heardUpTo = sentAt
        this.#heartbeat(client)
      }, (err: Error) => {
        this.#probing = false
        this.#lost(client, err)
      })
  }

  /** Sends a notification of its own the way the writes go; resolves, once it has come back to the listener, with when it was sent. */
  async #probe (): Promise<number> {
    const payload = `${PROBE}${randomUUID()}`
    const sentAt = performance.now()
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => { reject(new Error(NOT_HEARD(this.#probeMs))) }, this.#probeMs)
        this.#awaited.set(payload, () => { clearTimeout(timer); resolve() })
        this.options.notify(payload).catch((err: Error) => { clearTimeout(timer); reject(err) })
      })
      return sentAt
    } finally {
      this.#awaited.delete(payload)
    }
  }

  /**
   * Stops counting on `client`'s notifications, and listens again after a wait that grows while it
   * fails. Logged once for the loss, with its cause, and once when they are heard again: the attempts
   * in between that fail are the same outage.
   */
  #lost (client: Client | undefined, err: Error): void {
    // An old connection's late 'end', or a loss already handled, changes nothing.
    if (client === undefined || client !== this.#client || this.#closed) return
    this.#client = undefined
    this.#listening = false
    clearTimeout(this.#timer)
    endWithin(client, this.options.connectMs).catch(() => {})
    if (this.#lostAt === undefined) {
      this.#lostAt = performance.now()
      this.options.log.warn({ err }, `the change notifications of PostgreSQL are not heard: reads go to the database until they are (listening again is tried after ${this.#retryMs / 1000} s, then less often, up to every ${MAX_RETRY_MS / 1000} s)`)
    }
    this.#timer = setTimeout(() => { this.#start() }, this.#retryMs).unref()
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS)
  }
}

/**
 * Connects once to the listening connection's database (DATABASE_DIRECT_URL) as the service starts: a
 * server that refuses what it names (its user, password or database) is a setting to change, which the
 * feed, connecting at the first read, only logged and tried again for good. A server that cannot be
 * reached is left to the feed, as an outage.
 */
export async function refuseUnusableListenSetting (connectionString: string, connectMs: number): Promise<void> {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: connectMs, application_name: 'petstore change feed' })
  client.on('error', () => {}) // the connection's end, ended below
  try {
    await client.connect()
  } catch (error) {
    if (!isRefusedPostgresSetting(markConnectionRefused(error))) return
    throw new ConfigError(`Cannot use the PostgreSQL connection that DATABASE_DIRECT_URL names: ${messageOf(error)}`, { cause: error })
  }
  await endWithin(client, connectMs).catch(() => {})
}
