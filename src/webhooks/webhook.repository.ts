import { isoNow, type Clock } from '../clock.js'
import type { Database, Db } from '../db/database.js'
import { isPostgres } from '../db/dialect.js'
import { lockIdOrder } from '../db/id-order-lock.js'
import { findLastEventId } from '../events/event.repository.js'
import type { ClaimedCreate } from '../idempotency/idempotent-create.js'
import type { IdempotencyClaim, StoredResponse } from '../store/pet-store.js'
import { createdResponse, findClaimedResponse, saveResponse } from '../store/stored-response.js'
import { newWebhookSecret } from './webhook-signature.js'
import { isHttpStatus } from './webhook-transport.js'
import type { NewWebhook, Webhook, WebhookChanges, WebhookDelivery } from './webhook.schemas.js'
import { sql, type Selectable } from 'kysely'

/** How long a rotated-out secret keeps signing deliveries beside the new one. */
const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000

const WEBHOOK_COLUMNS = ['id', 'url', 'event_types', 'description', 'state', 'disabled_reason', 'last_error', 'created_at'] as const
type WebhookRow = Pick<Selectable<Database['webhooks']>, typeof WEBHOOK_COLUMNS[number]>

/** Event types as stored: space-separated, or `*`. */
function eventTypesColumn (events: readonly string[]): string {
  return events.includes('*') ? '*' : events.join(' ')
}

function webhookOfRow (row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.event_types.split(' ') as Webhook['events'],
    description: row.description,
    enabled: row.state === 'enabled',
    disabledReason: row.disabled_reason,
    lastError: row.last_error,
    createdAt: row.created_at
  }
}

export type WebhookCreated =
  | ClaimedCreate & { outcome: 'created', webhook: Webhook & { secret: string } } |
  ClaimedCreate & { outcome: 'replayed' } |
  /** There are `limit` subscriptions already: nothing was created. */
  { outcome: 'limit_reached' }

// Names the lock that keeps concurrent creates on several instances from passing the limit together.
const WEBHOOK_INSERT_LOCK = 7_340_006

/**
 * Creates a subscription that delivers the events committed after it, unless there are `limit`
 * already, and records the answer (with its secret, so that a retried registration gets the same
 * secret) under the claim when there is one.
 */
export async function createWebhook (db: Db, clock: Clock, { url, events, description }: NewWebhook, limit: number, claim?: IdempotencyClaim): Promise<WebhookCreated> {
  const now = isoNow(clock)
  return await db.transaction().execute(async (trx): Promise<WebhookCreated> => {
    if (claim !== undefined) {
      const stored = await findClaimedResponse(trx, claim)
      if (stored !== undefined) return { outcome: 'replayed', response: stored }
    }
    await lockIdOrder(trx, WEBHOOK_INSERT_LOCK)
    const { count } = await trx.selectFrom('webhooks').select((eb) => eb.fn.countAll<string>().as('count')).executeTakeFirstOrThrow()
    if (Number(count) >= limit) return { outcome: 'limit_reached' }
    const secret = newWebhookSecret()
    const row = await trx.insertInto('webhooks').values({
      url,
      event_types: eventTypesColumn(events),
      description: description ?? null,
      state: 'enabled',
      secret,
      delivered_through: await findLastEventId(trx),
      attempt: 0,
      next_attempt_at: now,
      lease_until: '',
      created_at: now,
      updated_at: now
    }).returning(WEBHOOK_COLUMNS).executeTakeFirstOrThrow()
    const webhook = { ...webhookOfRow(row), secret }
    let response: StoredResponse | undefined
    if (claim !== undefined) {
      response = createdResponse(claim, webhook)
      await saveResponse(trx, claim, response, now)
    }
    return { outcome: 'created', webhook, response }
  })
}

export async function findWebhookById (db: Db, id: bigint): Promise<Webhook | undefined> {
  const row = await db.selectFrom('webhooks').select(WEBHOOK_COLUMNS).where('id', '=', id).executeTakeFirst()
  return row === undefined ? undefined : webhookOfRow(row)
}

export async function findWebhookPage (db: Db, { afterId = 0n, limit }: { afterId: bigint | undefined, limit: number }): Promise<{ webhooks: Webhook[], nextAfterId: bigint | undefined }> {
  const rows = await db.selectFrom('webhooks').select(WEBHOOK_COLUMNS).where('id', '>', afterId).orderBy('id').limit(limit + 1).execute()
  const more = rows.length > limit
  if (more) rows.length = limit
  return { webhooks: rows.map(webhookOfRow), nextAfterId: more ? rows[limit - 1]!.id : undefined }
}

/**
 * Applies changes. A URL or types other than the current ones, or enabling a disabled subscription,
 * make its first undelivered event due at once with a fresh count of attempts (the same URL sent
 * again changes nothing of the schedule). A new URL also takes the lease from the instance delivering
 * to the old one: the outcome of an attempt on its way there would otherwise be recorded over this
 * change (its count of attempts, its retry hours away, or the subscription disabled after its last
 * attempt). That attempt, and the next event should it succeed, still go to the old URL, unrecorded.
 * New types, or enabling it again, keep the lease: the attempt on its way is recorded, but a failure
 * leaves the fresh count and schedule as they are (`AfterAttempt`).
 * Undefined when there is no such subscription.
 */
export async function updateWebhook (db: Db, clock: Clock, id: bigint, { url, events, description, enabled }: WebhookChanges): Promise<Webhook | undefined> {
  const now = isoNow(clock)
  // Compared with the row as it was: a SET's expressions read it before the update.
  const newUrl = url === undefined ? sql<boolean>`false` : sql<boolean>`url <> ${url}`
  const newTypes = events === undefined ? sql<boolean>`false` : otherTypesThan(eventTypesColumn(events))
  const fresh = sql<boolean>`(${newUrl} or ${newTypes} or ${enabled === true ? sql`state = 'disabled'` : sql`false`})`
  const row = await db.updateTable('webhooks').set({
    updated_at: now,
    ...(url !== undefined && { url }),
    ...(events !== undefined && { event_types: eventTypesColumn(events) }),
    ...(description !== undefined && { description }),
    ...(enabled === false && { state: 'disabled', disabled_reason: null }),
    ...(enabled === true && { state: 'enabled', disabled_reason: null }),
    attempt: sql<number>`case when ${fresh} then 0 else attempt end`,
    next_attempt_at: sql<string>`case when ${fresh} then ${now} else next_attempt_at end`,
    lease_until: sql<string>`case when ${newUrl} then '' else lease_until end`,
    lease_token: sql<string | null>`case when ${newUrl} then null else lease_token end`
  }).where('id', '=', id).returning(WEBHOOK_COLUMNS).executeTakeFirst()
  return row === undefined ? undefined : webhookOfRow(row)
}

/**
 * Whether the row's event types are another set than `column`'s: the same types in another order are
 * the same (the row keeps the order it was given in). Types are unique and none holds another, so the
 * same set is the same length with every type in it. (`_` is escaped: LIKE takes it for any character.)
 */
function otherTypesThan (column: string) {
  const missing = column.split(' ').map((type) => sql`' ' || event_types || ' ' not like ${`% ${type.replaceAll('_', '\\_')} %`} escape '\\'`)
  return sql<boolean>`(length(event_types) <> ${column.length} or ${sql.join(missing, sql` or `)})`
}

/** Deletes a subscription with its deliveries log; false when there was none. */
export async function deleteWebhook (db: Db, id: bigint): Promise<boolean> {
  return await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('webhook_redeliveries').where('webhook_id', '=', id).execute()
    await trx.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute()
    const { numDeletedRows } = await trx.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst()
    return numDeletedRows > 0n
  })
}

/** Gives a subscription a new secret; the old one signs beside it until the time returned. Undefined when there is no such subscription. */
export async function rotateWebhookSecret (db: Db, clock: Clock, id: bigint): Promise<{ secret: string, previousSecretExpiresAt: string } | undefined> {
  const secret = newWebhookSecret()
  const previousSecretExpiresAt = new Date(clock.now() + SECRET_OVERLAP_MS).toISOString()
  // One statement, which sees the secret as the rotation before it left it: a read first, on
  // PostgreSQL, let two rotations at once both keep the secret before them, and one of the secrets
  // answered never signed.
  const { numUpdatedRows } = await db.updateTable('webhooks')
    .set((eb) => ({ secret, previous_secret: eb.ref('secret'), previous_secret_until: previousSecretExpiresAt, updated_at: isoNow(clock) }))
    .where('id', '=', id).executeTakeFirst()
  return numUpdatedRows > 0n ? { secret, previousSecretExpiresAt } : undefined
}

const DELIVERY_COLUMNS = ['id', 'event_id', 'attempt', 'attempted_at', 'response_status', 'error', 'duration_ms'] as const

/** Attempts at a subscription's events, newest first, before `beforeId` when given. */
export async function findDeliveryPage (db: Db, webhookId: bigint, { beforeId, limit }: { beforeId: bigint | undefined, limit: number }): Promise<{ deliveries: WebhookDelivery[], nextBeforeId: bigint | undefined }> {
  let query = db.selectFrom('webhook_deliveries').select(DELIVERY_COLUMNS).where('webhook_id', '=', webhookId).orderBy('id', 'desc').limit(limit + 1)
  if (beforeId !== undefined) query = query.where('id', '<', beforeId)
  const rows = await query.execute()
  const more = rows.length > limit
  if (more) rows.length = limit
  // SQLite hands integers back as BigInt. An attempt logged with a status outside HTTP's (a 799, before
  // 4 December 2026) is read without it, as such an attempt is logged now.
  const deliveries = rows.map((row) => ({
    id: row.id,
    eventId: row.event_id,
    attempt: Number(row.attempt),
    attemptedAt: row.attempted_at,
    responseStatus: row.response_status === null || !isHttpStatus(Number(row.response_status)) ? null : Number(row.response_status),
    error: row.error,
    durationMs: Number(row.duration_ms)
  }))
  return { deliveries, nextBeforeId: more ? rows[limit - 1]!.id : undefined }
}

/** The event of one attempt of a subscription's, if there is such an attempt. */
export async function findDeliveredEventId (db: Db, webhookId: bigint, deliveryId: bigint): Promise<bigint | undefined> {
  const row = await db.selectFrom('webhook_deliveries').select('event_id').where('id', '=', deliveryId).where('webhook_id', '=', webhookId).executeTakeFirst()
  return row?.event_id
}

/** What asking for a retry came to: queued (or queued already), the queue full, or the subscription gone meanwhile. */
export type RedeliveryQueued = 'queued' | 'full' | 'gone'

/**
 * Asks for one more attempt at an event, made by the dispatcher of any instance (once, however often
 * it is asked while queued, even with the queue full), unless `limit` retries of the subscription are
 * queued already. Counted and queued in one transaction, under the subscription's row lock on
 * PostgreSQL (SQLite's transactions take its one write lock): requests on several instances at once
 * passed the bound together, and a subscription deleted meanwhile was left a retry of its own.
 */
export async function queueRedelivery (db: Db, webhookId: bigint, eventId: bigint, limit: number): Promise<RedeliveryQueued> {
  return await db.transaction().execute(async (trx) => {
    let subscription = trx.selectFrom('webhooks').select('id').where('id', '=', webhookId)
    if (isPostgres(trx)) subscription = subscription.forUpdate()
    if (await subscription.executeTakeFirst() === undefined) return 'gone'
    const queued = trx.selectFrom('webhook_redeliveries').where('webhook_id', '=', webhookId)
    if (await queued.select('id').where('event_id', '=', eventId).executeTakeFirst() !== undefined) return 'queued'
    const { count } = await queued.select((eb) => eb.fn.countAll<string>().as('count')).executeTakeFirstOrThrow()
    if (Number(count) >= limit) return 'full'
    await trx.insertInto('webhook_redeliveries').values({ webhook_id: webhookId, event_id: eventId, lease_until: '' }).execute()
    return 'queued'
  })
}
