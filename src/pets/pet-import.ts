import { setImmediate as nextTurn } from 'node:timers/promises'
import { apiValidatorCompiler } from '../api-validator.js'
import type { PetStore } from '../store/pet-store.js'
import { isPostgresConnectionLost } from '../store/store-errors.js'
import { formatValidationErrors } from '../validation/validation-error-message.js'
import type { ImportRow, RejectedRow, RowPosition } from './pet-import-file.js'
import { DEFAULT_PET_STATUS, NewPet } from './pet.schemas.js'

export interface ImportOptions {
  /** Rows per transaction: at most 5,000. */
  batchSize: number
  /** Validate only; store nothing. */
  dryRun: boolean
  /** Called after each batch with the number of rows handled so far, and of pets stored (or, in a dry run, valid). */
  onProgress?: (rowsDone: number, stored: number) => void
  /** Once aborted, no batch after the one under way is stored. */
  signal?: AbortSignal
}

export interface ImportReport {
  /** How many rows were stored (or, in a dry run, would be). */
  stored: number
  rejected: RejectedRow[]
  /** The batch the store refused, when one was: nothing of it was stored (unless `mayBeStored`), and no later batch was tried. */
  failedBatch?: {
    first: RowPosition
    last: RowPosition
    reason: string
    /** The connection was lost before the store's answer came: the batch may have been committed. */
    mayBeStored: boolean
  }
  /** The valid rows after a failed batch, or after the import was stopped, which were not tried: how many, and the first. */
  notTried: { count: number, first?: RowPosition }
  /** Whether the import was stopped (`signal`) before its last batch. */
  stopped: boolean
}

/**
 * Validates each row exactly as createPet validates a body (the same compiled schema, formats and
 * exact int64), then stores the valid ones in batches, one transaction each.
 */
export async function importPets (pets: PetStore, rows: ImportRow[], { batchSize, dryRun, onProgress, signal }: ImportOptions): Promise<ImportReport> {
  const validate = apiValidatorCompiler({ schema: NewPet, method: 'POST', url: '/v1/pets', httpPart: 'body' })
  const report: ImportReport = { stored: 0, rejected: [], notTried: { count: 0 }, stopped: false }

  for (let start = 0; start < rows.length; start += batchSize) {
    const batch: NewPet[] = []
    for (const { position, value, source } of rows.slice(start, start + batchSize)) {
      if (validate(value) === true) batch.push(value as NewPet)
      else report.rejected.push({ position, reason: formatValidationErrors(validate.errors ?? [], 'row').message, source })
    }
    if (signal?.aborted === true && report.failedBatch === undefined) report.stopped = true
    if (report.failedBatch !== undefined || report.stopped) {
      report.notTried.count += batch.length
      report.notTried.first ??= rows[start]!.position
      continue
    }
    try {
      if (!dryRun && batch.length > 0) {
        await pets.insertMany(batch.map((pet) => ({ ...pet, status: pet.status ?? DEFAULT_PET_STATUS })))
      }
      report.stored += batch.length
    } catch (error) {
      const last = rows[Math.min(start + batchSize, rows.length) - 1]!
      report.failedBatch = { first: rows[start]!.position, last: last.position, reason: error instanceof Error ? error.message : String(error), mayBeStored: isPostgresConnectionLost(error) }
    }
    onProgress?.(Math.min(start + batchSize, rows.length), report.stored)
    // A batch stored on this thread (SQLite) leaves the event loop no turn to hear a signal by.
    if (signal !== undefined) await nextTurn()
  }
  // Only a hint to the planner, which autovacuum gives within a minute anyway: its failure (a store
  // that stopped answering after the last batch) must not report stored pets as failed.
  if (!dryRun && report.stored > 0) await pets.refreshStatistics().catch(() => {})
  return report
}
