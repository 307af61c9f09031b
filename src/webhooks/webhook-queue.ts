import { sql, type QueryCreator } from 'kysely'
import type { Database, Db } from '../db/database.js'
import { withoutFsync } from '../db/commit-without-fsync.js'
import { isPostgres } from '../db/dialect.js'

/** The secrets a delivery is signed with at `now`: the current one, and the one rotated out while it still signs. */
function signingSecrets (row: { secret: string, previous_secret: string | null, previous_secret_until: string | null }, now: string): string[] {
  const stillSigns = row.previous_secret !== null && row.previous_secret_until !== null && row.previous_secret_until > now
  return stillSigns ? [row.secret, row.previous_secret!] : [row.secret]
}

/** A subscription an instance holds the lease of, with what it needs to deliver. */
export interface LeasedWebhook {
  id: bigint
  url: string
  eventTypes: string
  secrets: string[]
  deliveredThrough: bigint
  attempt: number
}

/** The subscription's row if the lease is still this instance's: changes (a PATCH, a rotation) are seen at the next batch. */
export async function readLeasedWebhook (db: Db, id: bigint, leaseToken: string, now: string): Promise<LeasedWebhook | undefined> {
  const row = await db.selectFrom('webhooks')
    .select(['id', 'url', 'event_types', 'state', 'secret', 'previous_secret', 'previous_secret_until', 'delivered_through', 'attempt'])
    .where('id', '=', id).where('lease_token', '=', leaseToken)
    .executeTakeFirst()
  if (row === undefined || row.state !== 'enabled') return undefined
  const secrets = signingSecrets(row, now)
  return { id: row.id, url: row.url, eventTypes: row.event_types, secrets, deliveredThrough: row.delivered_through, attempt: Number(row.attempt) }
}

/** Whether any subscription is enabled. */
export async function anyEnabledWebhook (db: Db): Promise<boolean> {
  return await anyRow(db.selectFrom('webhooks').select('id').where('state', '=', 'enabled').limit(1))
}

/**
 * Leases up to `limit` enabled subscriptions that are due and have events after their position,
 * most overdue first, until `leaseUntil`; returns their ids. On PostgreSQL rows another instance is
 * leasing at the same moment are skipped, not waited for (`FOR UPDATE SKIP LOCKED`), so each
 * subscription is worked by one instance at a time; SQLite has one writer.
 */
export async function leaseDueWebhooks (db: Db, { now, leaseUntil, leaseToken, limit }: { now: string, leaseUntil: string, leaseToken: string, limit: number }): Promise<bigint[]> {
  let due = db.selectFrom('webhooks').select('id')
    .where('state', '=', 'enabled').where('next_attempt_at', '<=', now).where('lease_until', '<=', now)
    .where('delivered_through', '<', db.selectFrom('events').select(sql<bigint>`coalesce(max(id), 0)`.as('last')))
    .orderBy('next_attempt_at').limit(limit)
  if (!await anyRow(due)) return []
  if (isPostgres(db)) due = due.forUpdate().skipLocked()
  const rows = await db.updateTable('webhooks').set({ lease_until: leaseUntil, lease_token: leaseToken })
    .where('id', 'in', due).returning('id').execute()
  return rows.map(({ id }) => id)
}

/** What an attempt came to, for the deliveries log. */
export interface AttemptRecord {
  eventId: bigint
  attempt: number
  attemptedAt: string
  responseStatus: number | null
  error: string | null
  durationMs: number
}

/**
 * How the subscription stands after an attempt. Should a PATCH have made it due afresh while a failed
 * attempt was on its way (new types, enabled again), the fresh count and schedule stand, and the lease
 * is given up.
 */
export type AfterAttempt =
  /** Delivered: the position moves past the event, and the lease is extended. */
  | { kind: 'delivered', leaseUntil: string } |
  /** Failed, with a retry at `nextAttemptAt`: the lease is given up. */
  { kind: 'retry', nextAttemptAt: string } |
  /** Failed for good (a 410, or the last retry): the subscription is disabled and the lease given up. */
  { kind: 'disable', reason: string }

/** What a record of an attempt found: whether the lease was held (and still is), and whether the next event may go. */
export interface Recorded {
  held: boolean
  goOn: boolean
}

/**
 * Logs an attempt and moves the subscription on, in one transaction, if this instance still holds
 * its lease; answers whether it may go on to the next event: false when the lease is lost (the
 * subscription was deleted, or the lease ran out and another instance took it), when the attempt
 * failed, or when the subscription was disabled meanwhile (the lease is then still to be given up).
 */
export async function recordAttempt (db: Db, webhookId: bigint, leaseToken: string, record: AttemptRecord, after: AfterAttempt): Promise<Recorded> {
  const update = (creator: QueryCreator<Database>) => {
    const held = creator.updateTable('webhooks').where('id', '=', webhookId).where('lease_token', '=', leaseToken)
    if (after.kind === 'delivered') return held.set({ delivered_through: record.eventId, attempt: 0, lease_until: after.leaseUntil }).returning('state')
    // A PATCH that makes the subscription due afresh sets next_attempt_at to its own time, later than
    // the attempt's start if it came while the attempt was on its way; nothing else moves it while the
    // lease is held (it was due when leased). Each expression reads the row as it was before the update.
    const unchanged = sql<boolean>`next_attempt_at <= ${record.attemptedAt}`
    const unlessChanged = <T>(value: T, column: 'attempt' | 'next_attempt_at' | 'state' | 'disabled_reason') => sql<T>`case when ${unchanged} then ${value} else ${sql.ref(column)} end`
    return held.set({
      attempt: unlessChanged(record.attempt, 'attempt'),
      last_error: record.error,
      lease_until: '',
      lease_token: null,
      ...(after.kind === 'retry' ?
          { next_attempt_at: unlessChanged(after.nextAttemptAt, 'next_attempt_at') } :
          { state: unlessChanged('disabled', 'state'), disabled_reason: unlessChanged(after.reason, 'disabled_reason') })
    }).returning('state')
  }
  // On PostgreSQL one statement: one round trip a delivery instead of four (begin, update, insert,
  // commit), which set the pace of a subscription under load (docs/benchmarks.md). Its CTEs run
  // whether or not the final select reads them; the attempt is logged only if the lease was held.
  // On either store the record's commit does not wait for the disk (on PostgreSQL `synchronous_commit`
  // off for this transaction alone; on SQLite no fsync under DURABILITY=strict): a subscription under
  // load kept up better (docs/benchmarks.md). Should the database server crash, or the machine lose
  // power, the records of the last moments may be lost, and those events are then sent again, with
  // the same `webhook-id`, as after a lost lease; the events themselves are kept. A later commit that
  // waits (a create's) flushes the records before it.
  const row = isPostgres(db) ?
      await db.with('updated', update)
        .with('logged', (creator) => {
          const attempt = deliveryRow(webhookId, record)
          const columns = Object.keys(attempt) as Array<keyof DeliveryRow>
          return creator.insertInto('webhook_deliveries').columns(columns).expression((eb) => eb.selectFrom('updated')
            .select(columns.map((column) => sql`${attempt[column]}::${sql.raw(DELIVERY_COLUMN_TYPES[column])}`.as(column))))
        })
        .with('relaxed', (creator) => creator.selectNoFrom(sql<string>`set_config('synchronous_commit', 'off', true)`.as('setting')))
        .selectFrom(['updated', 'relaxed']).select('state').executeTakeFirst() :
      await withoutFsync(db, async (connection) => await connection.transaction().execute(async (trx) => {
        const updated = await update(trx).executeTakeFirst()
        if (updated !== undefined) await insertAttempt(trx, webhookId, record)
        return updated
      }))
  if (row === undefined) return { held: false, goOn: false }
  return { held: after.kind === 'delivered', goOn: after.kind === 'delivered' && row.state === 'enabled' }
}

type DeliveryRow = ReturnType<typeof deliveryRow>

/** The row of `webhook_deliveries` that logs an attempt. */
function deliveryRow (webhookId: bigint, record: AttemptRecord) {
  return {
    webhook_id: webhookId,
    event_id: record.eventId,
    attempt: record.attempt,
    attempted_at: record.attemptedAt,
    response_status: record.responseStatus,
    error: record.error,
    duration_ms: record.durationMs
  }
}

// PostgreSQL takes a parameter in a select list as text: inserted from one, each value names its column's type.
const DELIVERY_COLUMN_TYPES: Record<keyof DeliveryRow, string> = {
  webhook_id: 'bigint', event_id: 'bigint', attempt: 'integer', attempted_at: 'text', response_status: 'integer', error: 'text', duration_ms: 'integer'
}

async function insertAttempt (trx: Db, webhookId: bigint, record: AttemptRecord): Promise<void> {
  await trx.insertInto('webhook_deliveries').values(deliveryRow(webhookId, record)).execute()
}

/**
 * Gives the lease up; `deliveredThrough` moves the position (events up to it were delivered or were
 * not of the subscription's types), `dueAt` puts the subscription behind those due before it.
 */
export async function releaseWebhook (db: Db, webhookId: bigint, leaseToken: string, { deliveredThrough, dueAt }: { deliveredThrough?: bigint, dueAt?: string } = {}): Promise<void> {
  await db.updateTable('webhooks')
    .set({
      lease_until: '',
      lease_token: null,
      ...(deliveredThrough !== undefined && { delivered_through: deliveredThrough }),
      ...(dueAt !== undefined && { next_attempt_at: dueAt })
    })
    .where('id', '=', webhookId).where('lease_token', '=', leaseToken)
    .execute()
}

/** Pushes the lease's end back to `leaseUntil` if this instance still holds it; false when it does not. */
export async function renewLease (db: Db, webhookId: bigint, leaseToken: string, leaseUntil: string): Promise<boolean> {
  const { numUpdatedRows } = await db.updateTable('webhooks').set({ lease_until: leaseUntil })
    .where('id', '=', webhookId).where('lease_token', '=', leaseToken)
    .executeTakeFirst()
  return numUpdatedRows > 0n
}

/**
 * Whether a query finds anything, read before leasing: an UPDATE takes SQLite's write lock even when
 * it changes nothing, and an idle instance polling for work would then queue behind every writer.
 */
async function anyRow (query: { execute: () => Promise<unknown[]> }): Promise<boolean> {
  return (await query.execute()).length > 0
}

/** A redelivery asked for with POST …/retry. */
export interface LeasedRedelivery {
  id: bigint
  webhookId: bigint
  eventId: bigint
}

/**
 * Leases up to `limit` redeliveries, oldest first, one per subscription on all instances together: the
 * oldest of each subscription none of whose retries is in flight (leased by a running instance). A
 * subscription's retries are so made one at a time, as its deliveries are, and one whose receiver
 * hangs holds one of an instance's retry slots, not all of them (it held up every other's retries).
 */
export async function leaseRedeliveries (db: Db, { now, leaseUntil, limit }: { now: string, leaseUntil: string, limit: number }): Promise<LeasedRedelivery[]> {
  let due = db.selectFrom('webhook_redeliveries as r').select('r.id')
    .where('r.lease_until', '<=', now)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('webhook_redeliveries as o').select('o.id')
      .whereRef('o.webhook_id', '=', 'r.webhook_id')
      .where((eb) => eb.or([eb('o.id', '<', eb.ref('r.id')), eb('o.lease_until', '>', now)])))))
    .orderBy('r.id').limit(limit)
  if (!await anyRow(due)) return []
  if (isPostgres(db)) due = due.forUpdate().skipLocked()
  const rows = await db.updateTable('webhook_redeliveries').set({ lease_until: leaseUntil })
    .where('id', 'in', due).returning(['id', 'webhook_id', 'event_id']).execute()
  return rows.map((row) => ({ id: row.id, webhookId: row.webhook_id, eventId: row.event_id }))
}

/** The subscription's URL and signing secrets at `now`, whatever its state. */
export async function findDeliveryTarget (db: Db, webhookId: bigint, now: string): Promise<{ url: string, secrets: string[] } | undefined> {
  const row = await db.selectFrom('webhooks').select(['url', 'secret', 'previous_secret', 'previous_secret_until']).where('id', '=', webhookId).executeTakeFirst()
  if (row === undefined) return undefined
  const secrets = signingSecrets(row, now)
  return { url: row.url, secrets }
}

/** The next attempt number of an event for a subscription, after those in the log. */
export async function nextAttemptNumber (db: Db, webhookId: bigint, eventId: bigint): Promise<number> {
  const row = await db.selectFrom('webhook_deliveries').select(sql<number>`coalesce(max(attempt), 0)`.as('last'))
    .where('webhook_id', '=', webhookId).where('event_id', '=', eventId).executeTakeFirstOrThrow()
  return Number(row.last) + 1
}

/**
 * Removes a redelivery from the queue and logs its attempt, in one transaction; no attempt is logged
 * when none could be made, or when the subscription was deleted meanwhile.
 */
export async function completeRedelivery (db: Db, redelivery: LeasedRedelivery, record: AttemptRecord | undefined): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('webhook_redeliveries').where('id', '=', redelivery.id).execute()
    const subscribed = await trx.selectFrom('webhooks').select('id').where('id', '=', redelivery.webhookId).executeTakeFirst()
    if (record !== undefined && subscribed !== undefined) await insertAttempt(trx, redelivery.webhookId, record)
  })
}

/** Events owed to enabled subscriptions, of any type, summed: the delivery queue's depth. */
export async function countOwedEvents (db: Db): Promise<number> {
  const row = await db.selectFrom('webhooks')
    .select(sql<string>`coalesce(sum((select coalesce(max(id), 0) from events) - delivered_through), 0)`.as('owed'))
    .where('state', '=', 'enabled').executeTakeFirstOrThrow()
  return Number(row.owed)
}

/** The position of the enabled subscription furthest behind: the event log keeps the events after it past their retention. */
export async function findOldestOwedPosition (db: Db): Promise<bigint | undefined> {
  const row = await db.selectFrom('webhooks').select(sql<bigint | null>`min(delivered_through)`.as('position')).where('state', '=', 'enabled').executeTakeFirstOrThrow()
  return row.position === null ? undefined : BigInt(row.position)
}
