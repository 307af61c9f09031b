import { once } from 'node:events'
import { constants, createWriteStream, mkdtempSync, open as openDescriptor, rmSync } from 'node:fs'
import { open, readlink, realpath, stat, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { Socket } from 'node:net'
import { isatty } from 'node:tty'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { promisify } from 'node:util'
import type { Store } from '../store/store.js'
import { ImportFileError, describePosition, formatOfFile, readImportItems, surveyImportFile, type FileState, type ImportFormat, type RejectedRow, type RowPosition } from '../pets/pet-import-file.js'
import { importPets, type ImportReport } from '../pets/pet-import.js'
import { printable } from '../printable.js'
import { RejectedRowsFile, RejectedRowsFileError } from './rejected-rows-file.js'
import { createProgress } from './progress.js'

export interface PetsImportOptions {
  format?: ImportFormat
  batchSize: number
  dryRun: boolean
  /** Where to write every rejected row, with its position and reason. */
  errors?: string
  /** The store's own files (see sqliteStoreFiles), which `errors` may not name. */
  storeFiles?: string[]
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
 * stops it after the batch under way, or at once before the first; `stopNow`, at once, with a line
 * saying what was stored. What is left under way (a batch, a pipe's writer awaited) is then the
 * caller's to end with the process.
 */
export async function runPetsImport (withStore: <T>(work: (store: Store) => Promise<T>) => Promise<T>, file: string, options: PetsImportOptions, signal?: AbortSignal, stopNow?: AbortSignal): Promise<boolean> {
  const format = options.format ?? formatOfFile(file)
  if (format === undefined) throw new ImportUsageError(`cannot tell the format of ${file}: name it .json or .csv, or pass --format`)
  // Before the first batch, a signal stops at once: a pipe may be waiting for its writer, or being copied.
  const input = await unlessStopped(openImportFile(file, signal), signal)
  if (input === undefined) return stoppedBeforeImport()
  try {
    // A first reading finds what makes the file unusable (not UTF-8, not JSON, a bad header) before anything is stored.
    const survey = await unlessStopped(usable(file, surveyImportFile(input.handle, format)), signal)
    if (survey === undefined) return stoppedBeforeImport()
    return await importRows(withStore, file, input.handle, format, survey, options, signal, stopNow)
  } finally {
    await input.close()
  }
}

/** `work`, or undefined once `signal` is aborted, `work` then left to the process's end. */
async function unlessStopped<T> (work: Promise<T>, signal?: AbortSignal): Promise<T | undefined> {
  if (signal === undefined) return await work
  work.catch(() => {})
  if (signal.aborted) return undefined
  try {
    return await Promise.race([work, once(signal, 'abort').then(() => undefined)])
  } catch (error) {
    // The work stopped by the signal itself (the copy of a pipe), before the race saw it.
    if (signal.aborted) return undefined
    throw error
  }
}

function stoppedBeforeImport (): false {
  console.log('Stopped (SIGTERM or Ctrl-C) before the import began: nothing stored.')
  return false
}

async function importRows (withStore: <T>(work: (store: Store) => Promise<T>) => Promise<T>, file: string, input: FileHandle, format: ImportFormat,
  { rows: total, csvHeader, state }: { rows: number, csvHeader?: string[], state: FileState }, options: PetsImportOptions, signal?: AbortSignal, stopNow?: AbortSignal): Promise<boolean> {
  // Opened before the import, so that a path that cannot be written stops it before anything is stored.
  const errorsHandle = options.errors === undefined ? undefined : await openErrorsFile(options.errors, file, options.storeFiles ?? [])
  try {
    const errorsFile = errorsHandle === undefined ? undefined : new RejectedRowsFile(errorsHandle, options.errors!, format, csvHeader)
    try {
      await errorsFile?.start()
    } catch (error) {
      if (!(error instanceof RejectedRowsFileError)) throw error
      console.log(`${error.message}. Nothing stored.`)
      return false
    }
    console.log(`${options.dryRun ? 'Checking' : 'Importing'} ${count(total, 'row')} from ${printable(file)} (${format.toUpperCase()}), ${options.batchSize} per transaction.`)
    // Rows are counted as they are gone through, rejected ones too: the lines after say how many were stored.
    const progress = createProgress(total, options.dryRun ? 'Checked' : 'Processed')
    const shown: RejectedRow[] = []
    // The batch being stored: a second signal may come before or after its commit, which the store
    // cannot take back.
    let underWay: { first: RowPosition, last: RowPosition } | undefined
    let stored = 0
    let rowsDone = 0
    const importing = withStore((store) => importPets(store.pets, readImportItems(input, format, state), {
      ...options,
      signal,
      onBatch: (first, last) => { underWay = { first, last } },
      onProgress: (done, storedSoFar) => {
        underWay = undefined
        stored = storedSoFar
        rowsDone = done
        progress.update(done)
      },
      onRejected: async (rejected) => {
        await errorsFile?.write(rejected)
        shown.push(...rejected.slice(0, SHOWN_REJECTIONS - shown.length))
      }
    }))
    // Stopped at once, the import is left to the process's end: what it does after is not reported.
    if (stopNow !== undefined) importing.catch(() => {})
    let report: ImportReport | undefined
    try {
      report = stopNow === undefined ? await importing : await Promise.race([importing, once(stopNow, 'abort').then(() => undefined)])
    } catch (error) {
      if (!(error instanceof ImportFileError)) throw error
      progress.stop()
      console.log(`${printable(file)}: ${error.message}. ${options.dryRun ? 'Nothing stored (dry run)' : `Stored: ${count(stored, 'pet')}, the file's first valid rows`}; the rest not.`)
      return false
    }
    progress.stop()
    if (report === undefined) {
      const what = options.dryRun ? 'nothing stored (dry run)' : underWay === undefined ? `${count(stored, 'pet')} stored` :
        `${count(stored, 'pet')} stored; the batch under way, from ${describePosition(underWay.first)} to ${describePosition(underWay.last)}, ` +
        'may or may not be stored: look for its pets in the store before importing those lines again; nothing after it is'
      console.log(`Stopped at once (a second SIGTERM or Ctrl-C): ${what}.`)
      return false
    }

    for (const { position, reason } of shown) console.log(`${describePosition(position)}: ${reason}`)
    if (report.rejected > shown.length) {
      const where = options.errors === undefined ? '; --errors FILE writes them all' : `, all in ${printable(options.errors)}`
      console.log(`… and ${count(report.rejected - shown.length, 'more rejected row')}${where}.`)
    }

    console.log(`${options.dryRun ? 'Valid, not stored (dry run)' : 'Stored'}: ${count(report.stored, 'pet')}.`)
    if (report.rejected > 0) console.log(`Rejected: ${count(report.rejected, 'row')}${options.errors === undefined ? '' : `, written to ${printable(options.errors)}`}.`)
    if (report.failedBatch !== undefined) {
      const { first, last, reason, mayBeStored } = report.failedBatch
      const batch = `the batch from ${describePosition(first)} to ${describePosition(last)}`
      if (mayBeStored) console.log(`Store failure: the connection to the store was lost during ${batch}, which may or may not be stored (${reason}): look for its pets in the store before importing those lines again.`)
      else console.log(`Store failure: ${batch} was not stored: ${reason}`)
      if (report.notTried.first !== undefined) console.log(`Not tried after the failure: ${count(report.notTried.count, 'valid row')}, from ${describePosition(report.notTried.first)} to the end.`)
    }
    if (report.unreported !== undefined) {
      console.log(`${report.unreported.reason}: the import stopped there; nothing from ${describePosition(report.unreported.first)} on was gone through.`)
    }
    if (report.stopped !== undefined) {
      console.log(`Stopped (SIGTERM or Ctrl-C) after the batch under way: ${count(total - rowsDone, 'row')} not tried, from ${describePosition(report.stopped.first)} to the end.`)
    }
    return report.rejected === 0 && report.failedBatch === undefined && report.stopped === undefined && report.unreported === undefined
  } finally {
    await errorsHandle?.close()
  }
}

/** The file being imported, open, and how to let it go. */
interface ImportInput {
  handle: FileHandle
  close: () => Promise<void>
}

/**
 * Opens the file to import; one that is not a regular file (a pipe, `/dev/stdin`) is first copied to
 * a temporary one, as it is read twice, which `signal` stops. The copy is removed when closed, or as
 * the process exits.
 */
async function openImportFile (path: string, signal?: AbortSignal): Promise<ImportInput> {
  let source: Readable
  try {
    if (!(await stat(path)).isFIFO()) {
      const handle = await open(path, 'r')
      const stats = await handle.stat()
      if (stats.isFile()) return { handle, close: async () => { await handle.close() } }
      // A device that never ends (/dev/zero) was copied until the temporary folder's disk was full.
      // A terminal is read as a pipe is, to its Ctrl-D.
      if (stats.isBlockDevice() || (stats.isCharacterDevice() && !isatty(handle.fd))) {
        await handle.close()
        throw new ImportUsageError(`${path} is a device, not a file of pets: name a file, or a pipe (/dev/stdin)`)
      }
      source = handle.createReadStream()
    } else {
      // A pipe is opened and read as a socket is, without a thread of libuv's pool blocked in open()
      // until a writer comes, or in read() while it writes nothing: a stopped import's exit waited for
      // that thread. Opened without blocking, it is read once a writer has come (Linux signals no end
      // of the pipe before).
      source = new Socket({ fd: await promisify(openDescriptor)(path, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false })
    }
  } catch (error) {
    if (error instanceof ImportUsageError) throw error
    throw new ImportUsageError(`cannot read ${path}: ${codeOf(error)}`)
  }
  let folder: string
  try {
    // Made and marked for removal in one step: made on libuv's pool, it existed a turn before its
    // removal at exit was set, and a signal in that turn left it behind.
    folder = mkdtempSync(join(tmpdir(), 'petstore-import-'))
  } catch (error) {
    source.destroy()
    throw cannotCopy(path, error)
  }
  const removeCopy = () => { rmSync(folder, { recursive: true, force: true }) }
  process.once('exit', removeCopy)
  const forgetCopy = () => {
    removeCopy()
    process.removeListener('exit', removeCopy)
  }
  const copyPath = join(folder, 'rows')
  const copy = createWriteStream(copyPath)
  // Which side failed: a write's error (ENOSPC) names no path.
  let copyFailed = false
  copy.once('error', () => { copyFailed = true })
  try {
    await pipeline(source, copy, { signal })
    const copyHandle = await open(copyPath, 'r')
    return { handle: copyHandle, close: async () => { await copyHandle.close(); forgetCopy() } }
  } catch (error) {
    forgetCopy()
    if (copyFailed || (error as NodeJS.ErrnoException).path?.startsWith(folder) === true) throw cannotCopy(path, error)
    throw new ImportUsageError(`cannot read ${path}: ${codeOf(error)}`)
  }
}

function cannotCopy (path: string, error: unknown): ImportUsageError {
  return new ImportUsageError(`cannot copy ${path} into the temporary folder ${tmpdir()} (TMPDIR): ${codeOf(error)}`)
}

/** A file system error's code (ENOENT), or the error's text. */
function codeOf (error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error)
}

/** What `reading` gives, or the one line of an ImportUsageError for a file that cannot be imported or read. */
async function usable<T> (file: string, reading: Promise<T>): Promise<T> {
  try {
    return await reading
  } catch (error) {
    if (error instanceof ImportFileError) throw new ImportUsageError(`${file}: ${error.message}`)
    const { code } = error as NodeJS.ErrnoException
    if (code !== undefined) throw new ImportUsageError(`cannot read ${file}: ${code}`)
    throw error
  }
}

/** Opens --errors FILE for writing, emptied; never the file being imported, which that would empty. */
async function openErrorsFile (path: string, imported: string, storeFiles: string[]): Promise<FileHandle> {
  if (await isSameFile(path, imported)) throw new ImportUsageError(`--errors names the file being imported (${imported}); name another file`)
  // Emptied as it is opened: the store's file (or its log, one that does not exist yet included) would be lost.
  const target = await pathWithLinksFollowed(path)
  for (const storeFile of storeFiles) {
    if (target === storeFile || await isSameFile(path, storeFile)) {
      throw new ImportUsageError(`--errors names a file of the store (${storeFile}): writing it would destroy the store; name another file`)
    }
  }
  try {
    return await open(path, 'w')
  } catch (error) {
    throw new ImportUsageError(`cannot write ${path}: ${codeOf(error)}`)
  }
}

/**
 * `path` made absolute, the links on the way to it followed: its folder's, and its own, to a file that
 * does not exist yet too (which opening the link for writing creates). At most 40 links, as the kernel.
 */
async function pathWithLinksFollowed (path: string, links = 0): Promise<string> {
  const absolute = resolve(path)
  try {
    return await realpath(absolute)
  } catch {
    const folder = await realpath(dirname(absolute)).catch(() => undefined)
    if (folder === undefined) return absolute
    // A link's target is read from the folder the link is in, as the kernel finds it: `..` leaves
    // the real folder, not the one a linked folder on the way seemed to be in.
    const target = links < 40 ? await readlink(absolute).catch(() => undefined) : undefined
    if (target !== undefined) return await pathWithLinksFollowed(resolve(folder, target), links + 1)
    return join(folder, basename(absolute))
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
