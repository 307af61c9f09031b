import { setImmediate as nextTurn } from 'node:timers/promises'
import { sql } from 'kysely'
import type { Db } from '../db/database.js'
import type { EventType } from './event.schemas.js'

/** An event as the API sends it: its id and type, and its JSON text. */
export interface StoredEvent {
  id: bigint
  type: EventType
  /** When the change was made, RFC 3339 UTC. */
  occurredAt: string
  json: string
}

/** Which events to read: those after `afterId` (up to `throughId`, when given), of the given types (all without), `limit` at most. */
export interface EventRange {
  afterId: bigint
  throughId?: bigint
  types: readonly EventType[] | undefined
  limit: number
}

/** Events in the range, in ascending id order, and whether more of it follow. */
export async function findEvents (db: Db, { afterId, throughId, types, limit }: EventRange): Promise<{ events: StoredEvent[], more: boolean }> {
  let query = db.selectFrom('events').select(['id', 'type', 'occurred_at', 'data']).where('id', '>', afterId).orderBy('id').limit(limit + 1)
  if (throughId !== undefined) query = query.where('id', '<=', throughId)
  if (types !== undefined) query = query.where('type', 'in', types)
  const rows = await query.execute()
  const more = rows.length > limit
  if (more) rows.length = limit
  // `data` is JSON text the service wrote: placed as it is, not parsed and written again.
  const events = rows.map(({ id, type, occurred_at: occurredAt, data }) => ({
    id, type, occurredAt, json: `{"id":${id},"type":${JSON.stringify(type)},"occurredAt":${JSON.stringify(occurredAt)},"data":${data}}`
  }))
  return { events, more }
}

/**
 * The same page as findEvents (to the end of the log), read `stepIds` ids of the log at most a
 * query, with a turn of the event loop between queries. A type rare in a long log is read in steps,
 * other requests served between them: read at once, a type absent from a million events held an
 * instance on SQLite, whose reads are synchronous, for 0.06 to 0.36 s a page.
 */
export async function findEventsInSteps (db: Db, { afterId, types, limit }: Omit<EventRange, 'throughId'>, stepIds: number): Promise<{ events: StoredEvent[], more: boolean }> {
  const last = await findLastEventId(db)
  const events: StoredEvent[] = []
  for (let from = afterId; ; from += BigInt(stepIds)) {
    // The last step reads to the end of the log, as it is then: what was committed meanwhile included.
    const final = from + BigInt(stepIds) >= last
    // Once the page is full, a read of limit 0 looks for one more event: whether a next page follows.
    const page = await findEvents(db, { afterId: from, throughId: final ? undefined : from + BigInt(stepIds), types, limit: limit - events.length })
    events.push(...page.events)
    if (page.more || final) return { events, more: page.more }
    await nextTurn()
  }
}

/** The event with this id, if it is still kept. */
export async function findEvent (db: Db, id: bigint): Promise<StoredEvent | undefined> {
  const { events: [event] } = await findEvents(db, { afterId: id - 1n, types: undefined, limit: 1 })
  return event?.id === id ? event : undefined
}

/**
 * The id of the newest event written: the newest kept or, when every event has been deleted for its
 * age, the last deleted (0 when none was ever written). Events are deleted oldest first, so one kept
 * is newer than any deleted. (Taken as 0, a stream opened then was reset at once, for events before it.)
 */
export async function findLastEventId (db: Db): Promise<bigint> {
  const row = await db.selectFrom('events').select('id').orderBy('id', 'desc').limit(1).executeTakeFirst()
  return row?.id ?? await findPrunedThrough(db)
}

/** The id of the last event deleted for its age (0 when none was): a reader after an older id has missed events. */
export async function findPrunedThrough (db: Db): Promise<bigint> {
  const row = await db.selectFrom('settings').select('value').where('name', '=', 'events_pruned_through').executeTakeFirstOrThrow()
  return BigInt(row.value)
}

/** The smallest id kept, if any. */
export async function findOldestEventId (db: Db): Promise<bigint | undefined> {
  const row = await db.selectFrom('events').select('id').orderBy('id').limit(1).executeTakeFirst()
  return row?.id
}

/**
 * Deletes, in one transaction, the oldest events up to `batch` of them, none after `through` (the
 * last expired: see findExpiredThrough), and records the last id deleted; returns how many. Walking
 * from the smallest id needs no index beyond the id's.
 */
export async function pruneEvents (db: Db, through: bigint, batch: number): Promise<number> {
  return await db.transaction().execute(async (trx) => {
    const oldest = await trx.selectFrom('events').select('id').where('id', '<=', through).orderBy('id').limit(batch).execute()
    if (oldest.length === 0) return 0
    const deleted = oldest.at(-1)!.id
    await trx.deleteFrom('events').where('id', '<=', deleted).execute()
    // Never backwards: another instance's pruning may have gone further meanwhile.
    await trx.updateTable('settings').set({ value: String(deleted) })
      .where('name', '=', 'events_pruned_through').where(sql`cast(value as bigint)`, '<', deleted)
      .execute()
    return oldest.length
  })
}
