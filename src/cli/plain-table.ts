/**
 * Rows as a plain text table, each column as wide as its widest cell, for people reading a terminal
 * (console.table adds an index column and quotes every string).
 */
export function plainTable (header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  const line = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}
