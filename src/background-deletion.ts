/**
 * Runs `deleteBatch` (which deletes at most one batch, in one transaction, and returns how many it
 * deleted) until a batch comes back short, yielding to requests between batches; resolves with the total.
 */
export async function deleteInBatches (deleteBatch: () => Promise<number>, batch: number): Promise<number> {
  let deleted = 0
  for (;;) {
    const count = await deleteBatch()
    deleted += count
    if (count < batch) return deleted
    await new Promise((resolve) => setImmediate(resolve))
  }
}

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
