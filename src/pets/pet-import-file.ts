import { isUtf8 } from 'node:buffer'
import type { FileHandle } from 'node:fs/promises'
import { finished } from 'node:stream/promises'
import { type CsvError, parse as parseCsv } from 'csv-parse'
import { messageOf } from '../error-message.js'
import { ApiError } from '../errors.js'
import { parseJsonBody } from '../plugins/json-body.js'
import { printable } from '../printable.js'
import { withoutSecrets } from '../without-secrets.js'
import { CR, JsonSyntaxError, JsonTokenReader, TextWindow, TokenType, positionAfter, type TextPosition } from '../validation/json-tokens.js'

export type ImportFormat = 'json' | 'csv'

/**
 * Where a row is in its file, so that it can be found in any file: a CSV record by the line it starts
 * on; a JSON array's element by its index (from 0) and the line and column it starts at, since a
 * whole array may be written on one line.
 */
export interface RowPosition {
  line: number
  index?: number
  column?: number
}

/** One row of an import file, as read: its place, its value, and its text in the file. */
export interface ImportRow {
  position: RowPosition
  value: unknown
  /** The row as the file writes it: a JSON element's text, or a CSV record's. */
  source: string
}

/** A row refused while reading or validating, and why. */
export interface RejectedRow {
  position: RowPosition
  reason: string
  source: string
}

/** A row of the file, read or refused (a `reason`) as it could not be read. */
export type ImportItem = ImportRow | RejectedRow

/** Whether an item is a row refused as it was read. */
export function isRejected (item: ImportItem): item is RejectedRow {
  return 'reason' in item
}

/** The file as a whole cannot be imported: not JSON, not an array, an unusable CSV header. */
export class ImportFileError extends Error {
  override name = 'ImportFileError'
}

const CSV_COLUMNS = ['name', 'categoryId', 'status']
/** The columns a report of rejected rows adds (see `pets import --errors`), which the import ignores. */
export const REPORT_COLUMNS = ['line', 'error']
const DECIMAL_INTEGER = /^-?\d+$/

/** The format named by the file's extension, if it names one. */
export function formatOfFile (path: string): ImportFormat | undefined {
  const extension = /\.(json|csv)$/i.exec(path)?.[1]?.toLowerCase()
  return extension as ImportFormat | undefined
}

/** "element [2] at line 1, column 58" for JSON, "line 10" for CSV. */
export function describePosition ({ line, index, column }: RowPosition): string {
  return index === undefined ? `line ${line}` : `element [${index}] at line ${line}, column ${column ?? 1}`
}

/** Bytes read from the file at a time. */
const CHUNK_BYTES = 64 * 1024
/**
 * The longest row, in bytes (JSON) or characters (CSV), far past any pet's: a longer one stops the
 * import as a file that cannot be used. Held whole, a gigabyte's field (or a CSV quote never closed,
 * which takes in the rest of the file) took gigabytes, and failed in V8's words.
 */
const MAX_ROW_LENGTH = 1024 * 1024

/** A file's size and time of last change, as first read: a reading that finds them changed stops. */
export interface FileState {
  size: number
  mtimeMs: number
}

/**
 * The file's items in its order, a chunk's worth at a time (about 64 KiB of the file): memory stays
 * flat however large the file. Throws ImportFileError for a file that cannot be imported at all when
 * it reads the fault, which may come after items were given: surveyImportFile reads the file through
 * before any is stored. Throws it too if the file is no longer as `state` says.
 */
export async function* readImportItems (file: FileHandle, format: ImportFormat, state: FileState): AsyncGenerator<ImportItem[]> {
  yield* readItems(file, format, state, {})
}

/** How many rows a file has, readable or not, a CSV file's header, and the file's state; throws ImportFileError as readImportItems does. */
export async function surveyImportFile (file: FileHandle, format: ImportFormat): Promise<{ rows: number, csvHeader?: string[], state: FileState }> {
  const { size, mtimeMs } = await file.stat()
  let csvHeader: string[] | undefined
  let rows = 0
  const reading = { countOnly: true, onCsvHeader: (header: string[]) => { csvHeader = header } }
  for await (const items of readItems(file, format, { size, mtimeMs }, reading)) rows += items.length
  return { rows, csvHeader, state: { size, mtimeMs } }
}

interface Reading {
  /** JSON elements are found and counted, not read: each is then COUNTED. */
  countOnly?: boolean
  /** Given a CSV file's header once read. */
  onCsvHeader?: (header: string[]) => void
}

// What a count of a JSON file's elements is given for each: reading them took half of a survey's time.
const COUNTED: ImportItem = { position: { line: 0 }, value: undefined, source: '' }

async function* readItems (file: FileHandle, format: ImportFormat, state: FileState, { countOnly = false, onCsvHeader }: Reading): AsyncGenerator<ImportItem[]> {
  const chunks = utf8Chunks(fileChunks(file, state))
  yield* (format === 'json' ? readJsonItems(chunks, countOnly) : readCsvItems(chunks, onCsvHeader))
}

/**
 * The file's bytes, up to the size it had. After each read its size and time of last change are
 * checked: a batch is stored only after the bytes it was read from were, so none is stored from a
 * file cut short or rewritten while it was imported.
 */
async function* fileChunks (file: FileHandle, state: FileState): AsyncGenerator<Buffer> {
  for (let position = 0; position < state.size;) {
    const { bytesRead, buffer } = await file.read(Buffer.allocUnsafe(CHUNK_BYTES), 0, Math.min(CHUNK_BYTES, state.size - position), position)
    const now = await file.stat()
    if (bytesRead === 0 || now.size !== state.size || now.mtimeMs !== state.mtimeMs) {
      throw new ImportFileError('the file changed while it was read (its size or time of last change): import it once nothing writes to it')
    }
    position += bytesRead
    yield buffer.subarray(0, bytesRead)
  }
}

const UTF8_BYTE_ORDER_MARK = Buffer.from([0xef, 0xbb, 0xbf])

/**
 * The file's text in chunks cut between characters, each checked to be UTF-8 (a fault named by line,
 * column and byte), without the byte order mark some editors write first (RFC 8259 lets a parser ignore
 * it; columns do not count it). Decoded as it is, what is not UTF-8 (a Latin-1 export's accents) would
 * be stored as U+FFFD, as if imported.
 */
async function* utf8Chunks (reads: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  // Holds the chunk being checked, and the position of its start.
  const window = new TextWindow()
  let carried: Buffer = Buffer.alloc(0) // a character cut at the end of the last read
  let textOffset = 0 // where the next chunk starts in the text, without the byte order mark
  let byteOrderMark = -1 // its length, once the file's first bytes are read
  for await (const read of reads) {
    let bytes = carried.length === 0 ? read : Buffer.concat([carried, read])
    if (byteOrderMark === -1) {
      byteOrderMark = bytes.subarray(0, 3).equals(UTF8_BYTE_ORDER_MARK) ? 3 : 0
      bytes = bytes.subarray(byteOrderMark)
    }
    let end = wholeCharactersIn(bytes)
    // A CR last is held for the next read: the LF of a CRLF would be counted as a line break of its own past the window's cut.
    if (end > 0 && bytes[end - 1] === CR) end--
    const chunk = bytes.subarray(0, end)
    carried = bytes.subarray(end)
    window.push(chunk)
    if (!isUtf8(chunk)) throw notUtf8(textOffset + firstNotUtf8(chunk), byteOrderMark, window)
    textOffset += chunk.length
    window.dropBefore(textOffset, window.positionOf(textOffset))
    yield chunk
  }
  if (carried.length === 0) return
  // A CR held back, whole, and perhaps a character cut short after it.
  window.push(carried)
  const heldCr = carried[0] === CR ? 1 : 0
  if (carried.length > heldCr) throw notUtf8(textOffset + heldCr, byteOrderMark, window)
  yield carried
}

function notUtf8 (textOffset: number, byteOrderMark: number, window: TextWindow): ImportFileError {
  const { line, column } = window.positionOf(textOffset)
  return new ImportFileError(`the file is not UTF-8: the bytes at line ${line}, column ${column} (byte ${byteOrderMark + textOffset}) are not; save it as UTF-8`)
}

/** The length of `bytes` without a UTF-8 character cut short at its end (at most three bytes). */
function wholeCharactersIn (bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!
    if ((byte & 0xc0) === 0x80) continue // a continuation byte: its character starts further back
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return length > back ? bytes.length - back : bytes.length
  }
  return bytes.length
}

/**
 * The offset at which the first sequence that is not UTF-8 starts. A streaming decoder holds back a
 * sequence cut short at the end, so "decodes so far" holds for every prefix short of the byte that
 * shows the fault and for none past it: a binary search finds that byte. The sequence it ends starts
 * at the last place before it where the text decodes whole (at most three bytes back).
 */
function firstNotUtf8 (bytes: Buffer): number {
  const decodes = (length: number, stream: boolean) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, length), { stream })
      return true
    } catch {
      return false
    }
  }
  let low = 0 // decodes so far
  let high = bytes.length // does not
  while (high - low > 1) {
    const middle = (low + high) >> 1
    if (decodes(middle, true)) low = middle
    else high = middle
  }
  let start = high - 1
  while (!decodes(start, false)) start--
  return start
}

/**
 * The elements of the file's one array, found by a streaming parser that gives each its byte offset.
 * Each element is then parsed on its own by the API's parser (exact int64, prototype keys refused),
 * so that an element it refuses is one rejected row, not a file that cannot be read. Of the text read,
 * only what follows the last of the array's own commas is kept: the element under way.
 */
async function* readJsonItems (chunks: AsyncIterable<Buffer>, countOnly: boolean): AsyncGenerator<ImportItem[]> {
  let items: ImportItem[] = []
  let depth = 0
  let index = 0
  const window = new TextWindow()
  // Where the text after the array's last `[` or `,` starts, and its position.
  let keptStart = 0
  let keptPosition: TextPosition = { line: 1, column: 1 }
  let element: { start: number, position: RowPosition } | undefined
  const afterSeparator = (offset: number) => {
    keptPosition = positionAfter(keptPosition, window.slice(keptStart, offset + 1), 0, offset + 1 - keptStart)
    keptStart = offset + 1
  }
  const reader = new JsonTokenReader((token, offset) => {
    if (depth === 0 && token !== TokenType.LEFT_BRACKET) throw new ImportFileError('a JSON import file must hold one array of pets')
    if (depth === 0) afterSeparator(offset)
    if (depth === 1) {
      if (token === TokenType.COMMA || token === TokenType.RIGHT_BRACKET) {
        if (element !== undefined) items.push(countOnly ? COUNTED : jsonItem(window.slice(element.start, offset).toString('utf8').trimEnd(), element.position))
        element = undefined
        afterSeparator(offset)
      } else if (element === undefined) {
        element = { start: offset, position: { index: index++, ...positionAfter(keptPosition, window.slice(keptStart, offset), 0, offset - keptStart) } }
      }
    }
    if (token === TokenType.LEFT_BRACKET || token === TokenType.LEFT_BRACE) depth++
    else if (token === TokenType.RIGHT_BRACKET || token === TokenType.RIGHT_BRACE) depth--
  }, window)
  const read = (step: () => void) => {
    try {
      step()
    } catch (error) {
      if (error instanceof JsonSyntaxError) throw new ImportFileError(`the file is not valid JSON: ${error.message}`)
      throw error
    }
  }
  for await (const chunk of chunks) {
    read(() => { reader.write(chunk) })
    window.dropBefore(keptStart, keptPosition)
    if (window.end - keptStart > MAX_ROW_LENGTH) {
      const at = element === undefined ? `line ${keptPosition.line}` : describePosition(element.position)
      throw new ImportFileError(`the row at ${at} is longer than ${MAX_ROW_LENGTH} bytes`)
    }
    if (items.length > 0) yield items
    items = []
  }
  read(() => { reader.end() })
  if (items.length > 0) yield items
}

function jsonItem (source: string, position: RowPosition): ImportItem {
  try {
    return { position, value: parseJsonBody(source), source }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    return { position, reason: error.message, source }
  }
}

/** A CSV header as a message quotes it: an API key or a webhook secret pasted into it (a column named after it) is not printed. */
function headerText (header: readonly string[]): string {
  return printable(withoutSecrets(header.join(',')))
}

/**
 * The records of a CSV file with a header, read by csv-parse's streaming parser, a chunk at a time;
 * a record it cannot read is a rejected row, in its place among the others.
 */
async function* readCsvItems (chunks: AsyncIterable<Buffer>, onCsvHeader?: (header: string[]) => void): AsyncGenerator<ImportItem[]> {
  let items: ImportItem[] = []
  let csvHeader: string[] = []
  const lines = new CsvLines()
  const parser = parseCsv({
    bom: true,
    columns: (header: string[]) => {
      const unknown = header.filter((column) => !CSV_COLUMNS.includes(column) && !REPORT_COLUMNS.includes(column))
      if (unknown.length > 0 || !header.includes('name') || !header.includes('categoryId')) {
        throw new ImportFileError(`the CSV header must name the columns name, categoryId and optionally status, and may name line and error, which are ignored (got ${headerText(header)})`)
      }
      const repeated = header.find((column, index) => header.indexOf(column) !== index)
      if (repeated !== undefined) throw new ImportFileError(`the CSV header names the column ${repeated} more than once (got ${headerText(header)})`)
      csvHeader = header
      // The line the header ends on, blank lines before it counted.
      lines.afterHeader(parser.info.lines)
      onCsvHeader?.(header)
      return header
    },
    raw: true,
    // Every line break ends a record, as it ends a line (see LINE_BREAK): csv-parse takes the first it
    // meets for all, and in a file of mixed ends kept the others as text (`Rex\r` stored as a name).
    record_delimiter: ['\r\n', '\r', '\n'],
    relax_column_count_less: true,
    // A quote inside a field (`a"b`, `"a"x`) is kept as text, as spreadsheets read it: refused, the
    // row's text was cut at the quote, and the rows after `"a"x` were taken into one unclosed field.
    relax_quotes: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    max_record_size: MAX_ROW_LENGTH,
    on_skip: (error) => {
      if (error === undefined) return
      const { line, source } = lines.record((error as CsvError & { raw: string }).raw)
      // Skipped, such a row took the rows after it with it, unsaid.
      if (error.code === 'CSV_MAX_RECORD_SIZE') throw new ImportFileError(`the row at line ${line} is longer than ${MAX_ROW_LENGTH} characters (a quote opened and never closed takes in the rest of the file)`)
      items.push({ position: { line }, reason: csvErrorReason(error, csvHeader.length), source })
    },
    // Each record is taken here, in its place among the skipped ones, and not passed on.
    on_record: ({ record, raw }: { record: Record<string, string>, raw: string }) => {
      const { line, source } = lines.record(raw)
      items.push({ position: { line }, value: csvRecordToBody(record), source })
      return undefined
    }
  })
  const read = async (step: (done: (error?: Error | null) => void) => void) => {
    try {
      await new Promise<void>((resolve, reject) => { step((error) => { if (error) reject(error); else resolve() }) })
    } catch (error) {
      if (error instanceof ImportFileError) throw error
      throw new ImportFileError(`the file is not readable CSV: ${messageOf(error)}`)
    }
  }
  // Its errors come to the steps' callbacks.
  parser.on('error', () => {})
  for await (const chunk of chunks) {
    await read((done) => parser.write(chunk, done))
    if (items.length > 0) yield items
    items = []
  }
  await read((done) => { parser.end(); finished(parser, { readable: false }).then(() => { done() }, done) })
  // An empty file would import nothing and succeed, as if it were the file meant.
  if (csvHeader.length === 0) throw new ImportFileError('the file has no CSV header: its first line must name the columns name, categoryId and optionally status')
  if (items.length > 0) yield items
}

// A line ends at CRLF, LF or a bare CR, as editors count them.
const LINE_BREAK = /\r\n|\r|\n/g
const LEADING_LINE_BREAKS = /^(?:\r\n|\r|\n)+/

/**
 * The line each CSV record starts on, counted from the records' own text (csv-parse's raw option),
 * one record after the other: csv-parse's own count takes a CRLF inside a quoted field for two lines.
 * A record's text starts with the blank lines skipped before it, and ends with its line break (of
 * a CRLF, csv-parse keeps the CR alone).
 */
class CsvLines {
  #next = 1 // the line the next record's text starts on

  afterHeader (headerLine: number): void {
    this.#next = headerLine + 1
  }

  /** The line a record starts on, and its text without the blank lines before it or its line break. */
  record (raw: string): { line: number, source: string } {
    const blank = LEADING_LINE_BREAKS.exec(raw)?.[0] ?? ''
    const line = this.#next + breaksIn(blank)
    this.#next += breaksIn(raw)
    return { line, source: raw.slice(blank.length).trimEnd() }
  }
}

function breaksIn (text: string): number {
  return text.match(LINE_BREAK)?.length ?? 0
}

/** csv-parse's reason, without the line it appends (the report names the row's own). */
function csvErrorReason (error: CsvError, columns: number): string {
  const fields = (error as CsvError & { record?: unknown[] }).record?.length
  if (error.code === 'CSV_RECORD_INCONSISTENT_COLUMNS' && fields !== undefined) return `The row has ${fields} fields; the header names ${columns}`
  if (error.code === 'CSV_QUOTE_NOT_CLOSED') return 'A quoted field is not closed before the end of the file'
  return error.message.replace(/ (on|at) line \d+$/, '')
}

/**
 * A CSV record as the JSON body it stands for: a decimal categoryId becomes an integer (any other text
 * stays text, and validation refuses it), and an empty status means "not given".
 */
function csvRecordToBody ({ name, categoryId, status }: Record<string, string>): Record<string, unknown> {
  return {
    name,
    categoryId: categoryId !== undefined && DECIMAL_INTEGER.test(categoryId) ? BigInt(categoryId) : categoryId,
    ...(status === undefined || status === '' ? {} : { status })
  }
}
