import { sql } from 'kysely'
import type { Db } from './database.js'

/** SQLite's `synchronous` values: OFF 0, NORMAL 1, FULL 2, EXTRA 3. */
const NORMAL = 1

/**
 * Runs `work` on SQLite's writing connection with `synchronous = NORMAL`, then puts the store's
 * setting back: under `DURABILITY=strict` (FULL) the commits `work` makes then skip their fsync, which
 * on the event loop stops every request while it waits. What they wrote is synced with the WAL by
 * the next commit that syncs it; only a power loss before that can take it. For bookkeeping whose
 * loss repeats work rather than loses data (a webhook attempt's record), never for a create.
 */
export async function withoutFsync<T> (db: Db, work: (connection: Db) => Promise<T>): Promise<T> {
  return await db.connection().execute(async (connection) => {
    const { rows: [setting] } = await sql<{ synchronous: number | bigint }>`pragma synchronous`.execute(connection)
    const synchronous = Number(setting!.synchronous)
    // Default durability is NORMAL already: nothing to turn off, nor to put back.
    if (synchronous <= NORMAL) return await work(connection)
    await sql`pragma synchronous = normal`.execute(connection)
    try {
      return await work(connection)
    } finally {
      await sql.raw(`pragma synchronous = ${synchronous}`).execute(connection)
    }
  })
}
