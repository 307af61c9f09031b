import { createHash } from 'node:crypto'
import { caseFold } from 'unicode-case-folding'

/**
 * A key longer than this (a name with kilobytes of whitespace around it, which names may have: they
 * are stored as sent) is kept as its digest: PostgreSQL's unique index refuses an entry past 2,704
 * bytes. 1 KiB holds the 100 characters of almost any name, folded (a character may fold to 12 bytes).
 */
export const LONGEST_KEY_BYTES = 1024
/** How a digest key starts; a folded name that starts so is kept as its digest too, so that no name's key is another's digest. */
export const DIGEST_PREFIX = 'sha256:'

/**
 * What makes two category names the same: equal after Unicode NFC and full case folding (CaseFolding.txt,
 * statuses C and F), so "Straße", "STRASSE" and "strasse" are one name. Computed here and stored in a
 * column under a unique index, so that both stores compare alike whatever their collations.
 */
export function categoryNameKey (name: string): string {
  const folded = foldedName(name)
  const long = Buffer.byteLength(folded) > LONGEST_KEY_BYTES || folded.startsWith(DIGEST_PREFIX)
  return long ? DIGEST_PREFIX + createHash('sha256').update(folded).digest('hex') : folded
}

/** A name after NFC and full case folding. Folding can leave a string unnormalized (ΐ folds to three code points), hence NFC on both sides. */
export function foldedName (name: string): string {
  return caseFold(name.normalize('NFC')).normalize('NFC')
}
