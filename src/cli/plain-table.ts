import { printable } from '../printable.js'

/**
 * Rows as a plain text table, each column as wide as its widest cell, for people reading a terminal
 * (console.table adds an index column and quotes every string). Cells are made printable: a key's
 * name stored before names were checked could otherwise forge the table.
 */
export function plainTable (header: string[], rows: string[][]): string {
  const printed = rows.map((row) => row.map(printable))
  const widths = header.map((title, column) => Math.max(title.length, ...printed.map((row) => row[column]!.length)))
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()
  return [line(header), ...printed.map(line)].join('\n')
}
