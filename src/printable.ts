// What changes how a terminal shows the rest of a line: C0 and C1 controls (line breaks, escape
// sequences), the line and paragraph separators, and the bidirectional marks, embeddings, overrides
// and isolates (a name that shows the rest of its row reversed).
const UNPRINTABLE = /[\p{Cc}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu

// The same, for a test: a global expression's `test` starts where its last match ended.
const UNPRINTABLE_ONE = new RegExp(UNPRINTABLE.source, 'u')

/** Whether `text` holds such a character. */
export function hasUnprintable (text: string): boolean {
  return UNPRINTABLE_ONE.test(text)
}

/** Text from a store, a file or a request, made safe to print to a terminal: those characters as `\u` escapes. */
export function printable (text: string): string {
  return text.replace(UNPRINTABLE, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** `text` cut to at most `length` UTF-16 units and an ellipsis, never between the two of one character. */
export function cut (text: string, length: number): string {
  if (text.length <= length) return text
  const end = /[\ud800-\udbff]/.test(text[length - 1]!) ? length - 1 : length
  return `${text.slice(0, end)}…`
}
