import { caseFold } from 'unicode-case-folding'

/**
 * What makes two category names the same: equal after Unicode NFC and full case folding (CaseFolding.txt,
 * statuses C and F), so "Straße", "STRASSE" and "strasse" are one name. Computed here and stored in a
 * column under a unique index, so that both stores compare alike whatever their collations.
 * Folding can leave a string unnormalized (ΐ folds to three code points), hence NFC on both sides.
 */
export function categoryNameKey (name: string): string {
  return caseFold(name.normalize('NFC')).normalize('NFC')
}
