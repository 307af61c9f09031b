import { once } from 'node:events'
import { open, readFile, stat, type FileHandle } from 'node:fs/promises'
import type { Store } from '../store/store.js'
import { ImportFileError, describePosition, formatOfFile, inFileOrder, readImportFile, type ImportFormat } from '../pets/pet-import-file.js'
import { importPets } from '../pets/pet-import.js'
import { writeRejectedRows } from './rejected-rows-file.js'
import { createProgress } from './progress.js'

export interface PetsImportOptions {
  format?: ImportFormat
  batchSize: number
  dryRun: boolean
  /** Where to write every rejected row, with its position and reason. */
  errors?: string
}

/** Thrown for a file that cannot be imported at all; the CLI prints it as one line and exits 2. */
export class ImportUsageError extends Error {
  override name = 'ImportUsageError'
}

/** The rejected rows shown on the terminal: a file may have thousands; --errors FILE gets them all. */
const SHOWN_REJECTIONS = 20

/**
 * `petstore pets import FILE`: prints the first rejected rows with their position and reason, then a
 * summary in counts. Resolves true when every row was stored (or, with --dry-run, is valid). `signal`
 * stops it after the batch under way; `stopNow`, at once, with a line saying what was stored (the batch
 * under way, not waited for, is then the caller's to end with the process).
 */
export async function runPetsImport (withStore: <T>(work: (store: Store) => Promise<T>) => Promise<T>, file: string, options: PetsImportOptions, signal?: AbortSignal, stopNow?: AbortSignal): Promise<boolean> {
  const format = options.format ?? formatOfFile(file)
  if (format === undefined) throw new ImportUsageError(`cannot tell the format of ${file}: name it .json or .csv, or pass --format`)
  let bytes: Buffer
  try {
    bytes = await readFile(file)
  } catch (error) {
    throw new ImportUsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  let read: ReturnType<typeof readImportFile>
  try {
    read = readImportFile(bytes, format)
  } catch (error) {
    if (error instanceof ImportFileError) throw new ImportUsageError(`${file}: ${error.message}`)
    throw error
  }
  // Opened before the import, so that a path that cannot be written stops it before anything is stored.
  const errorsFile = options.errors === undefined ? undefined : await openErrorsFile(options.errors, file)

  try {
    const total = read.rows.length + read.rejected.length
    console.log(`${options.dryRun ? 'Checking' : 'Importing'} ${count(total, 'row')} from ${file} (${format.toUpperCase()}), ${options.batchSize} per transaction.`)
    // Rows are counted as they are gone through, rejected ones too (those unreadable first): the lines after say how many were stored.
    const progress = createProgress(total, options.dryRun ? 'Checked' : 'Processed')
    progress.update(read.rejected.length)
    let rowsDone = 0
    let stored = 0
    const importing = withStore((store) => importPets(store.pets, read.rows, {
      ...options,
      signal,
      onProgress: (done, storedSoFar) => {
        rowsDone = done
        stored = storedSoFar
        progress.update(read.rejected.length + done)
      }
    }))
    const report = stopNow === undefined ? await importing : await Promise.race([importing, once(stopNow, 'abort').then(() => undefined)])
    progress.stop()
    if (report === undefined) {
      const from = read.rows[rowsDone]?.position
      const what = options.dryRun ? 'nothing stored (dry run)' : `${count(stored, 'pet')} stored${from === undefined ? '' : `; nothing from ${describePosition(from)} on`}`
      console.log(`Stopped at once (a second SIGTERM or Ctrl-C): ${what}.`)
      return false
    }

    const rejected = [...read.rejected, ...report.rejected].sort(inFileOrder)
    for (const { position, reason } of rejected.slice(0, SHOWN_REJECTIONS)) console.log(`${describePosition(position)}: ${reason}`)
    if (rejected.length > SHOWN_REJECTIONS) {
      const where = options.errors === undefined ? '; --errors FILE writes them all' : `, all in ${options.errors}`
      console.log(`… and ${count(rejected.length - SHOWN_REJECTIONS, 'more rejected row')}${where}.`)
    }
    if (errorsFile !== undefined) await writeRejectedRows(errorsFile, read, rejected)

    console.log(`${options.dryRun ? 'Valid, not stored (dry run)' : 'Stored'}: ${count(report.stored, 'pet')}.`)
    if (rejected.length > 0) console.log(`Rejected: ${count(rejected.length, 'row')}${options.errors === undefined ? '' : `, written to ${options.errors}`}.`)
    if (report.failedBatch !== undefined) {
      const { first, last, reason, mayBeStored } = report.failedBatch
      const batch = `the batch from ${describePosition(first)} to ${describePosition(last)}`
      if (mayBeStored) console.log(`Store failure: the connection to the store was lost during ${batch}, which may or may not be stored (${reason}): look for its pets in the store before importing those lines again.`)
      else console.log(`Store failure: ${batch} was not stored: ${reason}`)
      if (report.notTried.first !== undefined) console.log(`Not tried after the failure: ${count(report.notTried.count, 'valid row')}, from ${describePosition(report.notTried.first)} to the end.`)
    }
    if (report.stopped) {
      console.log(`Stopped (SIGTERM or Ctrl-C) after the batch under way: ${count(report.notTried.count, 'valid row')} not stored, from ${describePosition(report.notTried.first!)} to the end.`)
    }
    return rejected.length === 0 && report.failedBatch === undefined && !report.stopped
  } finally {
    await errorsFile?.close()
  }
}

/** Opens --errors FILE for writing, emptied; never the file being imported, which that would empty. */
async function openErrorsFile (path: string, imported: string): Promise<FileHandle> {
  if (await isSameFile(path, imported)) throw new ImportUsageError(`--errors names the file being imported (${imported}); name another file`)
  try {
    return await open(path, 'w')
  } catch (error) {
    throw new ImportUsageError(`cannot write ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
}

/** Whether two paths name one file (the same inode), however written; false when either does not exist. */
async function isSameFile (a: string, b: string): Promise<boolean> {
  const [first, second] = await Promise.all([stat(a).catch(() => undefined), stat(b).catch(() => undefined)])
  return first !== undefined && second !== undefined && first.dev === second.dev && first.ino === second.ino
}

/** "1 row", "10003 rows". */
function count (n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}
