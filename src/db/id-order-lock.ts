import { sql } from 'kysely'
import type { Db } from './database.js'
import { isPostgres } from './dialect.js'

/**
 * Makes ids of one table commit in increasing order, inside the caller's transaction, before the id
 * is drawn. SQLite has one writer, so they do already. PostgreSQL hands out sequence values to
 * concurrent transactions that may commit out of order, and a keyset reader could then skip a row:
 * a transaction-scoped advisory lock, named by a constant shared by every instance, prevents that.
 */
export async function lockIdOrder (trx: Db, lock: number): Promise<void> {
  // A constant, not a parameter: a statement without any shares the round trip of the transaction's begin.
  if (isPostgres(trx)) await sql`select pg_advisory_xact_lock(${sql.lit(lock)})`.execute(trx)
}

/** Names the lock that orders pet ids. */
export const PET_INSERT_LOCK = 7_340_001

/**
 * Names the lock every create with an `Idempotency-Key` takes, whatever it creates (a pet, a
 * category, a webhook, an order), before it looks at its key: two creates claiming one key on two
 * instances then run one after the other, and the second finds the first's answer instead of a
 * duplicate key. It is taken before any other lock, as every create takes its locks in the same order.
 */
export const IDEMPOTENCY_CLAIM_LOCK = 7_340_005

// Pets, orders and categories all record events, so their transactions queue here for an instant.
// Each takes it after every other lock it takes, so that while holding it a transaction waits for no
// other lock (no deadlock).
/** Names the lock that orders event ids. */
export const EVENT_INSERT_LOCK = 7_340_004
