import { isUtf8 } from 'node:buffer'
import { type CsvError, parse as parseCsv } from 'csv-parse/sync'
import { ApiError } from '../errors.js'
import { parseJsonBody } from '../plugins/json-body.js'
import { printable } from '../printable.js'
import { JsonSyntaxError, TextPositions, TokenType, readJsonTokens } from '../validation/json-tokens.js'

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

/** The rows read from a file, the rows it could not read, and the file's CSV header (if CSV). */
export interface ImportFile {
  format: ImportFormat
  rows: ImportRow[]
  rejected: RejectedRow[]
  csvHeader?: string[]
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

/** Orders rows as the file does. */
export function inFileOrder (a: { position: RowPosition }, b: { position: RowPosition }): number {
  return a.position.line - b.position.line || (a.position.column ?? 0) - (b.position.column ?? 0)
}

/** Reads the rows of a JSON array or a CSV file with a header; rows that cannot be read are rejected here. */
export function readImportFile (bytes: Buffer, format: ImportFormat): ImportFile {
  // Decoded as it is, what is not UTF-8 (a Latin-1 export's accents) would be stored as U+FFFD, as if imported.
  if (!isUtf8(bytes)) {
    const offset = firstNotUtf8(bytes)
    const { line, column } = new TextPositions(bytes).at(offset)
    throw new ImportFileError(`the file is not UTF-8: the bytes at line ${line}, column ${column} (byte ${offset}) are not; save it as UTF-8`)
  }
  return format === 'json' ? { format, ...readJsonRows(withoutByteOrderMark(bytes)) } : { format, ...readCsvRows(bytes.toString('utf8')) }
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

const UTF8_BYTE_ORDER_MARK = Buffer.from([0xef, 0xbb, 0xbf])

/** JSON text without the byte order mark some editors write first (RFC 8259 lets a parser ignore it); CSV's parser drops its own. */
function withoutByteOrderMark (bytes: Buffer): Buffer {
  return bytes.subarray(0, 3).equals(UTF8_BYTE_ORDER_MARK) ? bytes.subarray(3) : bytes
}

/**
 * The elements of the file's one array, found by a streaming parser that gives each its byte offset.
 * Each element is then parsed on its own by the API's parser (exact int64, prototype keys refused),
 * so that an element it refuses is one rejected row, not a file that cannot be read.
 */
function readJsonRows (bytes: Buffer): { rows: ImportRow[], rejected: RejectedRow[] } {
  const elements: Array<{ start: number, end: number }> = []
  let depth = 0
  try {
    readJsonTokens(bytes, (token, offset) => {
      if (depth === 0 && token !== TokenType.LEFT_BRACKET) throw new ImportFileError('a JSON import file must hold one array of pets')
      if (depth === 1) {
        const open = elements.at(-1)
        if (token === TokenType.COMMA || token === TokenType.RIGHT_BRACKET) {
          if (open !== undefined && open.end === -1) open.end = offset
        } else if (open === undefined || open.end !== -1) {
          elements.push({ start: offset, end: -1 })
        }
      }
      if (token === TokenType.LEFT_BRACKET || token === TokenType.LEFT_BRACE) depth++
      else if (token === TokenType.RIGHT_BRACKET || token === TokenType.RIGHT_BRACE) depth--
    })
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new ImportFileError(`the file is not valid JSON: ${error.message}`)
    throw error
  }
  const positions = new TextPositions(bytes)
  const rows: ImportRow[] = []
  const rejected: RejectedRow[] = []
  elements.forEach(({ start, end }, index) => {
    const source = bytes.toString('utf8', start, end).trimEnd()
    const position = { index, ...positions.at(start) }
    try {
      rows.push({ position, value: parseJsonBody(source), source })
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      rejected.push({ position, reason: error.message, source })
    }
  })
  return { rows, rejected }
}

function readCsvRows (text: string): { rows: ImportRow[], rejected: RejectedRow[], csvHeader: string[] } {
  const rejected: RejectedRow[] = []
  let csvHeader: string[] = []
  let rows: ImportRow[]
  try {
    rows = parseCsv(text, {
      bom: true,
      columns: (header: string[]) => {
        const unknown = header.filter((column) => !CSV_COLUMNS.includes(column) && !REPORT_COLUMNS.includes(column))
        if (unknown.length > 0 || !header.includes('name') || !header.includes('categoryId')) {
          throw new ImportFileError(`the CSV header must name the columns name, categoryId and optionally status, and may name line and error, which are ignored (got ${printable(header.join(','))})`)
        }
        const repeated = header.find((column, index) => header.indexOf(column) !== index)
        if (repeated !== undefined) throw new ImportFileError(`the CSV header names the column ${repeated} more than once (got ${printable(header.join(','))})`)
        csvHeader = header
        return header
      },
      info: true,
      raw: true,
      relax_column_count_less: true,
      // A quote inside a field (`a"b`, `"a"x`) is kept as text, as spreadsheets read it: refused, the
      // row's text was cut at the quote, and the rows after `"a"x` were taken into one unclosed field.
      relax_quotes: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (error) => {
        if (error === undefined) return
        const { lines, raw } = error as CsvError & { lines: number, raw: string }
        rejected.push({ position: { line: startLine(lines, raw) }, reason: csvErrorReason(error, csvHeader.length), source: raw.trimEnd() })
      },
      // Each record made a row as it is read: kept as csv-parse gives them (with an info object of a
      // dozen fields each) until all were read, 500,000 rows took 920 bytes each, against 670 now.
      on_record: ({ record, info, raw }: { record: Record<string, string>, info: { lines: number }, raw: string }): ImportRow => ({
        position: { line: startLine(info.lines, raw) },
        value: csvRecordToBody(record),
        source: raw.trimEnd()
      })
    })
  } catch (error) {
    if (error instanceof ImportFileError) throw error
    throw new ImportFileError(`the file is not readable CSV: ${error instanceof Error ? error.message : String(error)}`)
  }
  // An empty file would import nothing and succeed, as if it were the file meant.
  if (csvHeader.length === 0) throw new ImportFileError('the file has no CSV header: its first line must name the columns name, categoryId and optionally status')
  return { rows, rejected, csvHeader }
}

/** The line a record starts on, from the line it ends on: a quoted field may span lines. */
function startLine (endLine: number, raw: string): number {
  return endLine - (raw.trimEnd().match(/\n/g)?.length ?? 0)
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
