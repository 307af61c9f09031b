import { parse as parseCsv } from 'csv-parse/sync'
import { parseJsonBody } from '../plugins/json-body.js'

export type ImportFormat = 'json' | 'csv'

/** One row of an import file, as read, with the line it starts on. */
export interface ImportRow {
  line: number
  value: unknown
}

/** A row refused before or during validation, and why. */
export interface RejectedRow {
  line: number
  reason: string
}

/** The file as a whole cannot be imported: not JSON, not an array, an unusable CSV header. */
export class ImportFileError extends Error {
  override name = 'ImportFileError'
}

const CSV_COLUMNS = ['name', 'categoryId', 'status']
const DECIMAL_INTEGER = /^-?\d+$/

/** The format named by the file's extension, if it names one. */
export function formatOfFile (path: string): ImportFormat | undefined {
  const extension = /\.(json|csv)$/i.exec(path)?.[1]?.toLowerCase()
  return extension as ImportFormat | undefined
}

/** Reads the rows of a JSON array or a CSV file with a header; rows CSV cannot read are rejected here. */
export function readImportRows (text: string, format: ImportFormat): { rows: ImportRow[], rejected: RejectedRow[] } {
  return format === 'json' ? { rows: readJsonRows(text), rejected: [] } : readCsvRows(text)
}

function readJsonRows (text: string): ImportRow[] {
  let value: unknown
  try {
    // The API's own parser: exact int64, and prototype poisoning refused.
    value = parseJsonBody(text)
  } catch {
    throw new ImportFileError('the file is not valid JSON')
  }
  if (!Array.isArray(value)) throw new ImportFileError('a JSON import file must hold one array of pets')
  const lines = arrayElementLines(text)
  return value.map((element, i) => ({ line: lines[i]!, value: element }))
}

/** The line each element of the top-level array starts on, for a text that is valid JSON. */
function arrayElementLines (text: string): number[] {
  const lines: number[] = []
  let line = 1
  let depth = 0
  let inString = false
  let escaped = false
  let expectingElement = false
  for (const char of text) {
    if (char === '\n') line++
    if (inString) {
      if (escaped) escaped = false
      else if (char === '\\') escaped = true
      else if (char === '"') inString = false
      continue
    }
    if (depth === 1 && expectingElement && char !== ']' && !/\s/.test(char)) {
      lines.push(line)
      expectingElement = false
    }
    if (char === '"') inString = true
    else if (char === '[' || char === '{') expectingElement = ++depth === 1
    else if (char === ']' || char === '}') depth--
    else if (char === ',' && depth === 1) expectingElement = true
  }
  return lines
}

function readCsvRows (text: string): { rows: ImportRow[], rejected: RejectedRow[] } {
  const rejected: RejectedRow[] = []
  let records: Array<{ record: Record<string, string>, info: { lines: number }, raw: string }>
  try {
    records = parseCsv(text, {
      bom: true,
      columns: (header: string[]) => {
        const unknown = header.filter((column) => !CSV_COLUMNS.includes(column))
        if (unknown.length > 0 || !header.includes('name') || !header.includes('categoryId')) {
          throw new ImportFileError(`the CSV header must name the columns name, categoryId and optionally status (got ${header.join(',')})`)
        }
        return header
      },
      info: true,
      raw: true,
      relax_column_count_less: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (error) => { if (error !== undefined) rejected.push({ line: Number(error.lines), reason: error.message }) }
    })
  } catch (error) {
    if (error instanceof ImportFileError) throw error
    throw new ImportFileError(`the file is not readable CSV: ${error instanceof Error ? error.message : String(error)}`)
  }
  const rows = records.map(({ record, info, raw }) => ({
    // info.lines is where the record ends; a quoted field may span lines.
    line: info.lines - (raw.trimEnd().match(/\n/g)?.length ?? 0),
    value: csvRecordToBody(record)
  }))
  return { rows, rejected }
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
