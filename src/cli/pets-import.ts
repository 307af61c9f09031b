import { readFile } from 'node:fs/promises'
import type { Store } from '../store/store.js'
import { ImportFileError, formatOfFile, readImportRows, type ImportFormat } from '../pets/pet-import-file.js'
import { importPets } from '../pets/pet-import.js'
import { createProgress } from './progress.js'

export interface PetsImportOptions {
  format?: ImportFormat
  batchSize: number
  dryRun: boolean
}

/** Thrown for a file that cannot be imported at all; the CLI prints it as one line and exits 2. */
export class ImportUsageError extends Error {
  override name = 'ImportUsageError'
}

/**
 * `petstore pets import FILE`: prints each rejected row with its line and reason, then a summary naming
 * the lines stored. Resolves true when every row was stored (or, with --dry-run, is valid).
 */
export async function runPetsImport (withStore: <T>(work: (store: Store) => Promise<T>) => Promise<T>, file: string, options: PetsImportOptions): Promise<boolean> {
  const format = options.format ?? formatOfFile(file)
  if (format === undefined) throw new ImportUsageError(`cannot tell the format of ${file}: name it .json or .csv, or pass --format`)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new ImportUsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  let read: ReturnType<typeof readImportRows>
  try {
    read = readImportRows(text, format)
  } catch (error) {
    if (error instanceof ImportFileError) throw new ImportUsageError(`${file}: ${error.message}`)
    throw error
  }

  console.log(`${options.dryRun ? 'Checking' : 'Importing'} ${read.rows.length} ${read.rows.length === 1 ? 'row' : 'rows'} from ${file} (${format.toUpperCase()}), ${options.batchSize} per transaction.`)
  const progress = createProgress(read.rows.length, options.dryRun ? 'Checked' : 'Imported')
  const report = await withStore((store) => importPets(store.pets, read.rows, { ...options, onProgress: (done) => progress.update(done) }))
  progress.stop()

  const rejected = [...read.rejected, ...report.rejected].sort((a, b) => a.line - b.line)
  const allLines = [...read.rows.map(({ line }) => line), ...read.rejected.map(({ line }) => line)].sort((a, b) => a - b)
  const ranges = (lines: number[]) => formatRowRanges(lines, allLines)
  for (const { line, reason } of rejected) console.log(`line ${line}: ${reason}`)
  const stored = report.storedLines.length
  const verb = options.dryRun ? 'Valid, not stored (dry run)' : 'Stored'
  console.log(`${verb}: ${stored} ${stored === 1 ? 'pet' : 'pets'}${stored > 0 ? `, lines ${ranges(report.storedLines)}` : ''}.`)
  if (rejected.length > 0) console.log(`Rejected: ${rejected.length} ${rejected.length === 1 ? 'row' : 'rows'}, lines ${ranges(rejected.map(({ line }) => line))}.`)
  if (report.failedBatch !== undefined) {
    console.log(`Store failure: the batch of lines ${ranges(report.failedBatch.lines)} was not stored: ${report.failedBatch.reason}`)
    if (report.notTriedLines.length > 0) console.log(`Not tried after the failure: lines ${ranges(report.notTriedLines)}.`)
  }
  return rejected.length === 0 && report.failedBatch === undefined
}

/**
 * Names a set of rows by the lines they start on, as ranges of rows next to each other in the file:
 * "2-5, 9" when the rows of lines 2 to 5 and of line 9 are meant, and the row of line 7 is not. Rows
 * that start on one line (a JSON array written on one line) are named once, by that line.
 */
export function formatRowRanges (lines: number[], allLines: number[]): string {
  const ordinal = new Map([...new Set(allLines)].map((line, i) => [line, i]))
  const named = [...new Set(lines)]
  const ranges: string[] = []
  for (let i = 0; i < named.length;) {
    let end = i
    while (end + 1 < named.length && ordinal.get(named[end + 1]!) === ordinal.get(named[end]!)! + 1) end++
    ranges.push(end === i ? String(named[i]) : `${named[i]}-${named[end]}`)
    i = end + 1
  }
  return ranges.join(', ')
}
