import { hash, randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'
import { PERCENT_ENCODED_BASE62, percentEncodable } from '../percent-encodable.js'

const PREFIX = 'ps_'
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_CHARS = 32 // 32 base62 characters: about 190 bits
const CHECKSUM_CHARS = 6 // CRC32 in base62, so that scanners can tell a real key offline
/** Every key's length, in characters. */
export const API_KEY_LENGTH = PREFIX.length + RANDOM_CHARS + CHECKSUM_CHARS
const KEY_PATTERN = new RegExp(`^${PREFIX}[0-9A-Za-z]{${RANDOM_CHARS + CHECKSUM_CHARS}}$`)
// A part of a key this long or longer is redacted as a key: a key cut short by its last characters
// gives its secret away but for them (its checksum can be worked out again), where a shorter part
// leaves over 95 bits of the key unknown.
const SECRET_PART_CHARS = 16

/**
 * Finds every key in a text (a URL sent with a key in it, say), to redact it: its characters as they
 * are or percent-encoded (`ps%5F...`, or all of them), as a client's URL encoder may send them, and
 * also a key cut short, from 16 characters after its prefix on.
 */
export const API_KEYS_IN_TEXT = new RegExp(
  `${percentEncodable(PREFIX)}(?:[0-9A-Za-z]|${PERCENT_ENCODED_BASE62}){${SECRET_PART_CHARS},${RANDOM_CHARS + CHECKSUM_CHARS}}`, 'gi')

/**
 * Finds the runs of base62 characters, as they are or percent-encoded, that may hold a key's
 * characters after its prefix, as a client that drops the known `ps_` sends them, alone or glued to
 * other letters and digits (`Bearer` without its space): containsApiKeyWithoutPrefix tells them from
 * other runs by the checksum.
 */
export const UNPREFIXED_KEY_RUNS = new RegExp(`(?:[0-9A-Za-z]|${PERCENT_ENCODED_BASE62}){${RANDOM_CHARS + CHECKSUM_CHARS},}`, 'gi')

const PREFIX_CRC32 = crc32(PREFIX)

/** True when `text`, a run of base62 characters (some percent-encoded, perhaps), holds a whole key but for its prefix, at any place. */
export function containsApiKeyWithoutPrefix (text: string): boolean {
  // Only base62 characters are percent-decoded (see PERCENT_ENCODED_BASE62): no decoding can fail.
  const run = text.includes('%') ? decodeURIComponent(text) : text
  // A place is looked at only where the six characters after it can spell a CRC32 (under 2^32, read
  // as a number), and only then is a CRC32 made: a 16 KiB run costs a fraction of a millisecond, and
  // a few at most when every place can (a run of zeros).
  for (let end = RANDOM_CHARS; end + CHECKSUM_CHARS <= run.length; end++) {
    if (checksumFollows(run, end)) return true
  }
  return false
}

/** True when the characters of `text` from `end` are the checksum of a key whose random characters end there. */
function checksumFollows (text: string, end: number): boolean {
  const stated = base62Value(text, end, CHECKSUM_CHARS)
  return stated <= 0xffffffff && crc32(text.slice(end - RANDOM_CHARS, end), PREFIX_CRC32) === stated
}

/** The number the base62 digits of `text` from `start` spell, in BASE62's order (0-9, A-Z, a-z), as checksum writes it. */
function base62Value (text: string, start: number, length: number): number {
  let value = 0
  for (let i = start; i < start + length; i++) {
    const code = text.charCodeAt(i)
    value = value * 62 + (code <= 57 ? code - 48 : code <= 90 ? code - 55 : code - 61)
  }
  return value
}

/** A key just made: `key` is shown once and then only `hash` and `hint` are kept. */
export interface GeneratedApiKey {
  key: string
  hash: string
  hint: string
}

/** Makes a new key: `ps_` + 32 random base62 characters + a 6-character CRC32 checksum. */
export function generateApiKey (): GeneratedApiKey {
  const body = PREFIX + randomBase62(RANDOM_CHARS)
  const key = body + checksum(body)
  return { key, hash: hashApiKey(key), hint: `${PREFIX}…${key.slice(-4)}` }
}

/**
 * SHA-256 of the whole key, in hex. A fast hash is right here: keys carry 190 random bits, so there is
 * nothing to brute-force, and a slow hash would cost every request.
 */
export function hashApiKey (key: string): string {
  return hash('sha256', key, 'hex') // one-shot: half the cost of createHash's Hash object
}

/** True when the text has a key's shape and checksum: anything else is refused without a store lookup. */
export function isWellFormedApiKey (text: string): boolean {
  return KEY_PATTERN.test(text) && checksumFollows(text, PREFIX.length + RANDOM_CHARS)
}

function checksum (body: string): string {
  let value = crc32(body)
  let text = ''
  for (let i = 0; i < CHECKSUM_CHARS; i++) {
    text = BASE62[value % 62] + text
    value = Math.floor(value / 62)
  }
  return text
}

function randomBase62 (length: number): string {
  let text = ''
  while (text.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // Rejection sampling: 248 = 4 * 62, so every character is equally likely.
      if (byte < 248 && text.length < length) text += BASE62[byte % 62]
    }
  }
  return text
}
