import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { mkdtemp, open, rm, stat, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { Store } from '../store/store.js'
import { ImportFileError, describePosition, formatOfFile, readImportItems, surveyImportFile, type ImportFormat, type RejectedRow, type RowPosition } from '../pets/pet-import-file.js'
import { importPets } from '../pets/pet-import.js'
import { RejectedRowsFile } from './rejected-rows-file.js'
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
  const input = await openImportFile(file)
  try {
    // A first reading finds what makes the file unusable (not UTF-8, not JSON, a bad header) before anything is stored.
    const { rows: total, csvHeader } = await usable(file, surveyImportFile(input.handle, format))
    return await importRows(withStore, file, input.handle, format, total, csvHeader, options, signal, stopNow)
  } finally {
    await input.close()
  }
}

async function importRows (withStore: <T>(work: (store: Store) => Promise<T>) => Promise<T>, file: string, input: FileHandle, format: ImportFormat, total: number, csvHeader: string[] | undefined,
  options: PetsImportOptions, signal?: AbortSignal, stopNow?: AbortSignal): Promise<boolean> {
  // Opened before the import, so that a path that cannot be written stops it before anything is stored.
  const errorsHandle = options.errors === undefined ? undefined : await openErrorsFile(options.errors, file)
  try {
    const errorsFile = errorsHandle === undefined ? undefined : new RejectedRowsFile(errorsHandle, format, csvHeader)
    await errorsFile?.start()
    console.log(`${options.dryRun ? 'Checking' : 'Importing'} ${count(total, 'row')} from ${file} (${format.toUpperCase()}), ${options.batchSize} per transaction.`)
    // Rows are counted as they are gone through, rejected ones too: the lines after say how many were stored.
    const progress = createProgress(total, options.dryRun ? 'Checked' : 'Processed')
    const shown: RejectedRow[] = []
    let underWay: RowPosition | undefined
    let stored = 0
    const importing = withStore((store) => importPets(store.pets, readImportItems(input, format), {
      ...options,
      signal,
      onBatch: (first) => { underWay = first },
      onProgress: (done, storedSoFar) => {
        underWay = undefined
        stored = storedSoFar
        progress.update(done)
      },
      onRejected: async (rejected) => {
        shown.push(...rejected.slice(0, SHOWN_REJECTIONS - shown.length))
        await errorsFile?.write(rejected)
      }
    }))
    // Stopped at once, the import is left to the process's end: what it does after is not reported.
    if (stopNow !== undefined) importing.catch(() => {})
    const report = await usable(file, stopNow === undefined ? importing : Promise.race([importing, once(stopNow, 'abort').then(() => undefined)]), () => stored)
    progress.stop()
    if (report === undefined) {
      const what = options.dryRun ? 'nothing stored (dry run)' : `${count(stored, 'pet')} stored${underWay === undefined ? '' : `; nothing from ${describePosition(underWay)} on`}`
      console.log(`Stopped at once (a second SIGTERM or Ctrl-C): ${what}.`)
      return false
    }

    for (const { position, reason } of shown) console.log(`${describePosition(position)}: ${reason}`)
    if (report.rejected > shown.length) {
      const where = options.errors === undefined ? '; --errors FILE writes them all' : `, all in ${options.errors}`
      console.log(`… and ${count(report.rejected - shown.length, 'more rejected row')}${where}.`)
    }

    console.log(`${options.dryRun ? 'Valid, not stored (dry run)' : 'Stored'}: ${count(report.stored, 'pet')}.`)
    if (report.rejected > 0) console.log(`Rejected: ${count(report.rejected, 'row')}${options.errors === undefined ? '' : `, written to ${options.errors}`}.`)
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
    return report.rejected === 0 && report.failedBatch === undefined && !report.stopped
  } finally {
    await errorsHandle?.close()
  }
}

/** The file being imported, open, and how to let it go. */
interface ImportInput {
  handle: FileHandle
  close: () => Promise<void>
}

/** Opens the file to import; one that is not a regular file (a pipe, `/dev/stdin`) is first copied to a temporary one, as it is read twice. */
async function openImportFile (path: string): Promise<ImportInput> {
  let handle: FileHandle | undefined
  let copied: string | undefined
  try {
    handle = await open(path, 'r')
    if ((await handle.stat()).isFile()) {
      const regular = handle
      return { handle: regular, close: async () => { await regular.close() } }
    }
    copied = await mkdtemp(join(tmpdir(), 'petstore-import-'))
    const copy = join(copied, 'rows')
    await pipeline(handle.createReadStream(), createWriteStream(copy))
    const copyHandle = await open(copy, 'r')
    const folder = copied
    return { handle: copyHandle, close: async () => { await copyHandle.close(); await rm(folder, { recursive: true, force: true }) } }
  } catch (error) {
    await handle?.close().catch(() => {})
    if (copied !== undefined) await rm(copied, { recursive: true, force: true })
    throw new ImportUsageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
}

/**
 * What `reading` gives, or the one line of an ImportUsageError for a file that cannot be imported or
 * read. A fault found while importing (the file changed after its first reading) says how many pets
 * were stored before it: `storedSoFar` tells.
 */
async function usable<T> (file: string, reading: Promise<T>, storedSoFar?: () => number): Promise<T> {
  try {
    return await reading
  } catch (error) {
    if (storedSoFar !== undefined) {
      if (error instanceof ImportFileError) throw new ImportUsageError(`${file} changed while it was imported, after ${count(storedSoFar(), 'pet')} stored: ${error.message}`)
      throw error
    }
    if (error instanceof ImportFileError) throw new ImportUsageError(`${file}: ${error.message}`)
    const { code } = error as NodeJS.ErrnoException
    if (code !== undefined) throw new ImportUsageError(`cannot read ${file}: ${code}`)
    throw error
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
