/**
 * Rows as a plain text table, each column as wide as its widest cell, for people reading a terminal
 * (console.table adds an index column and quotes every string).
 */
export function plainTable (header: string[], rows: string[][]): string {
  const printed = rows.map((row) => row.map(printable))
  const widths = header.map((title, column) => Math.max(title.length, ...printed.map((row) => row[column]!.length)))
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()
  return [line(header), ...printed.map(line)].join('\n')
}

/**
 * A cell with its control characters written as `\u` escapes: a line break or a terminal escape
 * sequence in a stored value (a key's name, from before names were checked) would forge the table.
 */
function printable (cell: string): string {
  return cell.replace(/\p{Cc}/gu, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
