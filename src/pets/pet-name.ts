import type { StringFormat } from '../validation/validator-compiler.js'

const MAX_NAME_LENGTH = 100

/**
 * A pet's name: 1 to 100 characters (code points) once whitespace is trimmed from both ends; any
 * well-formed Unicode except U+0000, which PostgreSQL cannot store. The name is stored as sent.
 */
export function isValidPetName (name: string): boolean {
  if (!name.isWellFormed() || name.includes('\0')) return false
  const trimmed = trimWhitespace(name)
  if (trimmed.length === 0) return false
  // Characters are code points, not UTF-16 units, so an emoji counts once; a code point takes one or two units.
  if (trimmed.length <= MAX_NAME_LENGTH) return true
  return trimmed.length <= 2 * MAX_NAME_LENGTH && [...trimmed].length <= MAX_NAME_LENGTH
}

// What trim() removes, and U+0085 (NEL), the one Unicode White_Space character it keeps.
const WHITESPACE_CLASS = '[\\s\\u0085]'
const WHITESPACE = new RegExp(WHITESPACE_CLASS)

// The rule in a regular expression, for validators that do not know the format (the schema's
// `pattern`): whitespace at either end, and between them 1 to 100 code points without U+0000 nor
// lone surrogate, the first and last not whitespace. Read alike with the u flag or without: without
// it an emoji is a pair of surrogates, which the second branch of a character takes.
const CHARACTER = '(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])'
const VISIBLE = '(?:[^\\s\\u0085\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])'
export const NAME_PATTERN = `^${WHITESPACE_CLASS}*${VISIBLE}(?:${CHARACTER}{0,${MAX_NAME_LENGTH - 2}}${VISIBLE})?${WHITESPACE_CLASS}*$`

/** `text` without whitespace at both ends. A loop, not a regular expression anchored at the end, which backtracks quadratically. */
function trimWhitespace (text: string): string {
  let start = 0
  let end = text.length
  while (start < end && WHITESPACE.test(text[start]!)) start++
  while (end > start && WHITESPACE.test(text[end - 1]!)) end--
  return text.slice(start, end)
}

/** The `pet-name` string format of the schemas. */
export const PET_NAME_FORMAT: StringFormat = {
  validate: isValidPetName,
  rule: `must be 1 to ${MAX_NAME_LENGTH} characters once whitespace at both ends is trimmed, in well-formed Unicode without U+0000`
}
