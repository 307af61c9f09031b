/**
 * A pattern (for a RegExp with the `i` flag) of `text` with any of its characters percent-encoded, as
 * a URL encoder may send them: `ps_` also as `ps%5F` or `%70%73%5F`. For finding secrets in URLs.
 */
export function percentEncodable (text: string): string {
  return [...text].map((char) => `(?:${char.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')}|%${char.charCodeAt(0).toString(16).padStart(2, '0')})`).join('')
}

/** A base62 character (0-9, A-Z, a-z) percent-encoded, %30 to %39, %41 to %5A or %61 to %7A (with the `i` flag). */
export const PERCENT_ENCODED_BASE62 = '%(?:3[0-9]|4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A])'
