import { sql } from 'kysely'
import type { Db } from './db/database.js'

/**
 * The id through which a log (`table`, its rows dated by `timeColumn` in ISO 8601 UTC) has expired:
 * the last row dated before `before` that comes before the first row the clock dates as kept, from
 * `before` to `now`. Ids follow the order in which rows were written, their dates the clock's at the
 * time: a row dated in the future (a clock stepped forward, then back) is as old as the rows after
 * it, and stopped the deletion by date until its date came (in 2030, for a clock set four years
 * ahead for a moment); a row dated in the past (a clock stepped back) deletes none after it early,
 * as a kept row comes first. The first row kept is found walking by id from the oldest row, as long
 * as what has expired (and a stretch dated in the future, every run until the rows after it
 * expire); the last expired, back from it. Neither walks past `atMost` (the rows after it are kept
 * whatever their dates: events a webhook owes), so that a log held there costs no walk of what it holds.
 */
export async function findExpiredThrough (db: Db, { table, timeColumn, before, now, atMost }: ExpiryScan): Promise<bigint | undefined> {
  const inRange = atMost === undefined ? sql`` : sql`and id <= ${atMost}`
  const { rows: [kept] } = await sql<{ id: bigint }>`select id from ${sql.table(table)}
    where ${sql.ref(timeColumn)} >= ${before} and ${sql.ref(timeColumn)} <= ${now} ${inRange} order by id limit 1`.execute(db)
  const { rows: [expired] } = await sql<{ id: bigint }>`select id from ${sql.table(table)}
    where ${sql.ref(timeColumn)} < ${before} ${inRange} ${kept === undefined ? sql`` : sql`and id < ${kept.id}`} order by id desc limit 1`.execute(db)
  return expired?.id
}

/** A log to look at for expired rows (see findExpiredThrough); times in ISO 8601 UTC. */
export interface ExpiryScan {
  table: 'events' | 'webhook_deliveries'
  timeColumn: 'occurred_at' | 'attempted_at'
  before: string
  now: string
  atMost?: bigint | undefined
}
