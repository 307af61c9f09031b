import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { deleteExpiredKeys } from './idempotency-key.repository.js'
import { IDEMPOTENCY_RETENTION_MS } from './idempotent-create.js'

const PURGE_INTERVAL_MS = 60_000
const BATCH = 1000

/**
 * Deletes expired idempotency records, a thousand per transaction, yielding to requests between
 * batches, until none is left; resolves with how many it deleted. (A create looks only at records
 * younger than the retention time, so one not purged yet changes nothing.)
 */
export async function purgeExpiredKeys (db: Db, clock: Clock): Promise<number> {
  const before = new Date(clock.now() - IDEMPOTENCY_RETENTION_MS).toISOString()
  let deleted = 0
  for (;;) {
    const batch = await deleteExpiredKeys(db, before, BATCH)
    deleted += batch
    if (batch < BATCH) return deleted
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Purges expired records every minute until stopped; a failed purge is reported and tried again next time. */
export function schedulePurge (db: Db, clock: Clock, onError: (error: Error) => void): { stop: () => Promise<void> } {
  let running: Promise<unknown> = Promise.resolve()
  const timer = setInterval(() => {
    running = purgeExpiredKeys(db, clock).catch(onError)
  }, PURGE_INTERVAL_MS).unref()
  return {
    stop: async () => {
      clearInterval(timer)
      await running
    }
  }
}
