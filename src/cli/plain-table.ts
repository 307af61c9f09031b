import stringWidth from 'string-width'
import { printable } from '../printable.js'

/**
 * Rows as a plain text table, each column as wide as its widest cell, for people reading a terminal
 * (console.table adds an index column and quotes every string). Cells are made printable: a key's
 * name stored before names were checked could otherwise forge the table. Widths are the columns a
 * terminal gives a cell, not its UTF-16 units: an emoji or a CJK character takes two, a combining
 * accent none.
 */
export function plainTable (header: string[], rows: string[][]): string {
  const printed = rows.map((row) => row.map(printable))
  const widths = header.map((title, column) => Math.max(stringWidth(title), ...printed.map((row) => stringWidth(row[column]!))))
  const line = (cells: string[]) => cells.map((cell, column) => cell + ' '.repeat(widths[column]! - stringWidth(cell))).join('  ').trimEnd()
  return [line(header), ...printed.map(line)].join('\n')
}
