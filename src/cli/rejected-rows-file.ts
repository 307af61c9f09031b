import type { FileHandle } from 'node:fs/promises'
import { parse } from 'csv-parse/sync'
import { stringify } from 'csv-stringify/sync'
import { messageOf } from '../error-message.js'
import { REPORT_COLUMNS, type ImportFormat, type RejectedRow } from '../pets/pet-import-file.js'

// JSON whitespace holding a line break: outside any string, since a JSON string cannot hold one raw.
const LINE_BREAKS = /[ \t]*[\r\n][ \t\r\n]*/g

/** The report cannot be written (a full disk, a pipe whose reader is gone): the import stops there, and says what it stored. */
export class RejectedRowsFileError extends Error {
  override name = 'RejectedRowsFileError'
}

/**
 * Writes every rejected row for `pets import --errors FILE`, in the format of the file imported, as
 * they come: for CSV, the columns `line` and `error` and then the file's own, which the import
 * ignores, so the file once fixed imports as it is; for JSON, one JSON object a line (JSON Lines) with
 * the element's `index`, `line`, `column`, the `error`, and the element itself as `row`.
 */
export class RejectedRowsFile {
  /** The CSV file's columns kept in the report, by their place in its header. */
  readonly #kept: number[]
  /** The bytes of the writes that went in whole: a write that fails is cut back to them. */
  #length = 0

  /** `path`: the file's, as given, for messages. */
  constructor (private readonly file: FileHandle, private readonly path: string, private readonly format: ImportFormat, private readonly csvHeader: string[] = []) {
    // A file that is itself such a report has its `line` and `error` columns replaced.
    this.#kept = csvHeader.flatMap((name, i) => REPORT_COLUMNS.includes(name) ? [] : [i])
  }

  /** Writes the CSV report's header (a JSON report has none). */
  async start (): Promise<void> {
    if (this.format === 'csv') await this.#write(stringify([[...REPORT_COLUMNS, ...this.#kept.map((i) => this.csvHeader[i])]]))
  }

  async write (rejected: RejectedRow[]): Promise<void> {
    await this.#write(this.format === 'csv' ? stringify(rejected.map((row) => this.#csvRecord(row))) : rejected.map(jsonLine).join(''))
  }

  async #write (text: string): Promise<void> {
    const bytes = Buffer.from(text)
    try {
      // A write may take less than it was given (a disk filling up): the rest is written, or fails, after it.
      for (let written = 0; written < bytes.length;) written += (await this.file.write(bytes, written)).bytesWritten
      this.#length += bytes.length
    } catch (error) {
      // The part that went in is cut off: the report holds the rows of the batches gone through, which
      // the import's last words name, and not the first of a batch it says it never reached, or half a
      // row. A file that cannot be cut (a pipe, a device) keeps it.
      await this.file.truncate(this.#length).catch(() => {})
      throw new RejectedRowsFileError(`--errors ${this.path} cannot be written (${messageOf(error)})`, { cause: error })
    }
  }

  #csvRecord ({ position, reason, source }: RejectedRow): unknown[] {
    const fields = fieldsOf(source)
    // Fields past the header's stay, so a row that had too many still has them until it is fixed.
    return [position.line, reason, ...this.#kept.map((i) => fields[i] ?? ''), ...fields.slice(this.csvHeader.length)]
  }
}

/** A record's fields, or its whole text as one field when CSV cannot read it as one record (an unclosed quote). */
function fieldsOf (source: string): string[] {
  try {
    const records = parse(source, { relax_column_count: true, relax_quotes: true }) as string[][]
    return records.length === 1 ? records[0]! : [source]
  } catch {
    return [source]
  }
}

function jsonLine ({ position: { index, line, column }, reason, source }: RejectedRow): string {
  return `{"index":${index ?? 0},"line":${line},"column":${column ?? 1},"error":${JSON.stringify(reason)},"row":${source.replace(LINE_BREAKS, ' ')}}\n`
}
