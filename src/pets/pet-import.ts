import { setImmediate as nextTurn } from 'node:timers/promises'
import { apiValidatorCompiler } from '../api-validator.js'
import { messageOf } from '../error-message.js'
import type { PetStore } from '../store/pet-store.js'
import { isPostgresConnectionLost } from '../store/store-errors.js'
import { formatValidationErrors } from '../validation/validation-error-message.js'
import { isRejected, type ImportItem, type RejectedRow, type RowPosition } from './pet-import-file.js'
import { DEFAULT_PET_STATUS, NewPet } from './pet.schemas.js'

export interface ImportOptions {
  /** Readable rows per transaction: at most 5,000. */
  batchSize: number
  /** Validate only; store nothing. */
  dryRun: boolean
  /** Called before each batch is stored, with its first and last readable rows. */
  onBatch?: (first: RowPosition, last: RowPosition) => void
  /** Called after each batch with the number of rows gone through so far (unreadable ones too), and of pets stored (or, in a dry run, valid). */
  onProgress?: (rowsDone: number, stored: number) => void
  /** Given each batch's rejected rows, in the file's order; awaited before the next batch. Should it fail, the import stops (see `unreported`). */
  onRejected?: (rows: RejectedRow[]) => void | Promise<void>
  /** Once aborted, no batch after the one under way is stored. */
  signal?: AbortSignal
}

export interface ImportReport {
  /** How many rows were stored (or, in a dry run, would be). */
  stored: number
  /** How many rows were rejected, unreadable or invalid. */
  rejected: number
  /** The batch the store refused, when one was: nothing of it was stored (unless `mayBeStored`), and no later batch was tried. */
  failedBatch?: {
    first: RowPosition
    last: RowPosition
    reason: string
    /** The connection was lost before the store's answer came: the batch may have been committed. */
    mayBeStored: boolean
  }
  /** The valid rows after a failed batch, which were not tried: how many, and the first. */
  notTried: { count: number, first?: RowPosition }
  /**
   * Set when the import was stopped (`signal`) before its last batch: the first row not gone through.
   * The rows from it on are not read, so that a stop is as quick for a file of millions of rows.
   */
  stopped?: { first: RowPosition }
  /** Set when `onRejected` failed (a report that cannot be written): the batch it failed on, and why; nothing from it on was gone through. */
  unreported?: { first: RowPosition, reason: string }
}

/**
 * Validates each row exactly as createPet validates a body (the same compiled schema, formats and
 * exact int64), then stores the valid ones in batches, one transaction each. Rows are taken as they
 * are read: only a batch is held at a time.
 */
export async function importPets (pets: PetStore, items: AsyncIterable<ImportItem[]>, { batchSize, dryRun, onBatch, onProgress, onRejected, signal }: ImportOptions): Promise<ImportReport> {
  const validate = apiValidatorCompiler({ schema: NewPet, method: 'POST', url: '/v1/pets', httpPart: 'body' })
  const report: ImportReport = { stored: 0, rejected: 0, notTried: { count: 0 } }
  let rowsDone = 0

  /** Goes through a batch; false when the import must stop (see `unreported`). */
  const importBatch = async (batch: ImportItem[]): Promise<boolean> => {
    const rows = batch.filter((item) => !isRejected(item))
    const valid: NewPet[] = []
    const rejected: RejectedRow[] = []
    for (const item of batch) {
      if (isRejected(item)) rejected.push(item)
      else if (validate(item.value) === true) valid.push(item.value as NewPet)
      else rejected.push({ position: item.position, reason: formatValidationErrors(validate.errors ?? [], 'row').message, source: item.source })
    }
    if (rejected.length > 0) {
      try {
        await onRejected?.(rejected)
      } catch (error) {
        report.unreported = { first: batch[0]!.position, reason: messageOf(error) }
        return false
      }
    }
    report.rejected += rejected.length
    if (report.failedBatch !== undefined) {
      report.notTried.count += valid.length
      report.notTried.first ??= rows[0]?.position
    } else if (rows.length > 0) {
      onBatch?.(rows[0]!.position, rows.at(-1)!.position)
      try {
        if (!dryRun && valid.length > 0) {
          await pets.insertMany(valid.map((pet) => ({ ...pet, status: pet.status ?? DEFAULT_PET_STATUS })))
        }
        report.stored += valid.length
      } catch (error) {
        report.failedBatch = { first: rows[0]!.position, last: rows.at(-1)!.position, reason: messageOf(error), mayBeStored: isPostgresConnectionLost(error) }
      }
    }
    rowsDone += batch.length
    onProgress?.(rowsDone, report.stored)
    // A batch stored on this thread (SQLite) leaves the event loop no turn to hear a signal by.
    if (signal !== undefined) await nextTurn()
    return true
  }

  // A batch holds `batchSize` readable rows, and the unreadable ones among them.
  let batch: ImportItem[] = []
  let readable = 0
  rows: for await (const chunk of items) {
    for (const item of chunk) {
      // Stopped, the rows from the next batch on are not read: a stop is as quick in a file of millions.
      if (batch.length === 0 && signal?.aborted === true && report.failedBatch === undefined) {
        report.stopped = { first: item.position }
        break rows
      }
      batch.push(item)
      if (isRejected(item) || ++readable < batchSize) continue
      const goOn = await importBatch(batch)
      batch = []
      readable = 0
      if (!goOn) break rows
    }
  }
  if (batch.length > 0) await importBatch(batch)
  // Only a hint to the planner, which autovacuum gives within a minute anyway: its failure (a store
  // that stopped answering after the last batch) must not report stored pets as failed.
  if (!dryRun && report.stored > 0) await pets.refreshStatistics().catch(() => {})
  return report
}
