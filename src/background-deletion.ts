import { setImmediate as nextTurn } from 'node:timers/promises'

/**
 * Runs `deleteBatch` (which deletes at most one batch, in one transaction, and returns how many it
 * deleted) until a batch comes back short, yielding to requests between batches; resolves with the total.
 * `onDeleted` hears each batch as it commits: a run that fails part way has deleted those all the same.
 */
export async function deleteInBatches (deleteBatch: () => Promise<number>, batch: number, onDeleted: DeletedCount = () => {}): Promise<number> {
  let deleted = 0
  for (;;) {
    const count = await deleteBatch()
    deleted += count
    onDeleted(count)
    if (count < batch) return deleted
    await nextTurn()
  }
}

/** Hears how many rows a batch deleted, once it committed. */
export type DeletedCount = (count: number) => void

/**
 * Runs `deletion` every `intervalMs` until stopped, never twice at once (a run longer than that skips
 * the next); a failure is reported and it runs again next time.
 */
export function scheduleDeletion (deletion: () => Promise<unknown>, intervalMs: number, onError: (error: Error) => void): { stop: () => Promise<void> } {
  let running: Promise<unknown> | undefined
  const timer = setInterval(() => {
    running ??= deletion().catch(onError).finally(() => { running = undefined })
  }, intervalMs).unref()
  return {
    stop: async () => {
      clearInterval(timer)
      await running
    }
  }
}
