import { stringify as stringifyExact } from 'lossless-json'
import type { Db } from '../db/database.js'
import { EVENT_INSERT_LOCK, lockIdOrder } from '../db/id-order-lock.js'
import type { EventType } from './event.schemas.js'

export interface NewEvent {
  type: EventType
  /** The resource as the API answers it after the change. */
  data: object
}

// Three bound values a row: well within PostgreSQL's 65,535 a statement.
const ROWS_PER_INSERT = 1000

/**
 * Records events in the caller's transaction (the transactional outbox): they commit with the change
 * they describe, or neither does; ids become visible in increasing order, so a reader that has seen
 * event N will never find a smaller id it has not seen.
 */
export async function recordEvents (trx: Db, occurredAt: string, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return
  await lockIdOrder(trx, EVENT_INSERT_LOCK)
  for (let start = 0; start < events.length; start += ROWS_PER_INSERT) {
    const rows = events.slice(start, start + ROWS_PER_INSERT).map(({ type, data }) => ({ type, occurred_at: occurredAt, data: stringifyExact(data)! }))
    await trx.insertInto('events').values(rows).execute()
  }
}
