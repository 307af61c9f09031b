import { apiValidatorCompiler } from '../api-validator.js'
import type { PetStore } from '../store/pet-store.js'
import { formatValidationErrors } from '../validation/validation-error-message.js'
import type { ImportRow, RejectedRow } from './pet-import-file.js'
import { DEFAULT_PET_STATUS, NewPet } from './pet.schemas.js'

export interface ImportOptions {
  /** Rows per transaction: at most 5,000. */
  batchSize: number
  /** Validate only; store nothing. */
  dryRun: boolean
  /** Called after each batch with the number of rows handled so far. */
  onProgress?: (rowsDone: number) => void
}

export interface ImportReport {
  /** Lines of the rows stored (or, in a dry run, that would be), in file order. */
  storedLines: number[]
  rejected: RejectedRow[]
  /** The batch the store refused, when one was: nothing of it was stored, and no later batch was tried. */
  failedBatch?: { lines: number[], reason: string }
  /** Lines of the valid rows after a failed batch, which were not tried. */
  notTriedLines: number[]
}

/**
 * Validates each row exactly as createPet validates a body (the same compiled schema, formats and
 * exact int64), then stores the valid ones in batches, one transaction each.
 */
export async function importPets (pets: PetStore, rows: ImportRow[], { batchSize, dryRun, onProgress }: ImportOptions): Promise<ImportReport> {
  const validate = apiValidatorCompiler({ schema: NewPet, method: 'POST', url: '/v1/pets', httpPart: 'body' })
  const report: ImportReport = { storedLines: [], rejected: [], notTriedLines: [] }

  for (let start = 0; start < rows.length; start += batchSize) {
    const batch: Array<{ line: number, pet: NewPet }> = []
    for (const { line, value } of rows.slice(start, start + batchSize)) {
      if (validate(value) === true) batch.push({ line, pet: value as NewPet })
      else report.rejected.push({ line, reason: formatValidationErrors(validate.errors ?? [], 'row').message })
    }
    const lines = batch.map(({ line }) => line)
    if (report.failedBatch !== undefined) {
      report.notTriedLines.push(...lines)
      continue
    }
    try {
      if (!dryRun && batch.length > 0) {
        await pets.insertMany(batch.map(({ pet }) => ({ ...pet, status: pet.status ?? DEFAULT_PET_STATUS })))
      }
      report.storedLines.push(...lines)
    } catch (error) {
      report.failedBatch = { lines, reason: error instanceof Error ? error.message : String(error) }
    }
    onProgress?.(Math.min(start + batchSize, rows.length))
  }
  // Only a hint to the planner, which autovacuum gives within a minute anyway: its failure (a store
  // that stopped answering after the last batch) must not report stored pets as failed.
  if (!dryRun && report.storedLines.length > 0) await pets.refreshStatistics().catch(() => {})
  return report
}
