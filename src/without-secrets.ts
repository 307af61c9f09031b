import { API_KEYS_IN_TEXT, containsApiKeyWithoutPrefix, UNPREFIXED_KEY_RUNS } from './api-keys/api-key.service.js'
import { containsWebhookSecretWithoutPrefix, UNPREFIXED_SECRET_CHARS, UNPREFIXED_SECRET_RUNS, WEBHOOK_SECRETS_IN_TEXT } from './webhooks/webhook-signature.js'

/** What a secret is written as. */
export const REDACTED = '[redacted]'

/**
 * A text with every API key and webhook secret in it, as it is or percent-encoded, written
 * `[redacted]`: for what is written out of what a request sent (a key pasted into a URL, a field name
 * or a header, say), in a log line or an answer. A key's characters after its prefix first, found by
 * their checksum in a run of letters and digits: after the prefixed pattern, whose match may take a
 * few characters before a key (`ps_` and up to 38), what was left of the key was too short to be told
 * (a key without its prefix, `ps_` and a few letters before it). Then keys by their prefix, cut short
 * ones too, in a pass of their own: one pattern for both keys and secrets would let a secret's match
 * take a key's prefix after `whsec_` (a key pasted where a secret goes) and leave the rest of the key
 * in the text. Then a secret's base64 without its prefix, told by its checksum (see newWebhookSecret),
 * and a URL's user and password.
 */
export function withoutSecrets (text: string): string {
  // Most lines hold no run long enough for a key or a secret without its prefix: a scan by hand spares
  // them the two expressions that look for one, which cost a log line several times as much.
  const mayHoldUnprefixed = hasLongRun(text, UNPREFIXED_SECRET_CHARS)
  let redacted = mayHoldUnprefixed ? text.replace(UNPREFIXED_KEY_RUNS, (run) => containsApiKeyWithoutPrefix(run) ? REDACTED : run) : text
  redacted = redacted.replace(API_KEYS_IN_TEXT, REDACTED).replace(WEBHOOK_SECRETS_IN_TEXT, REDACTED)
  if (mayHoldUnprefixed) redacted = redacted.replace(UNPREFIXED_SECRET_RUNS, (run) => containsWebhookSecretWithoutPrefix(run) ? REDACTED : run)
  return redacted.includes('://') ? redacted.replace(URL_CREDENTIALS, `${REDACTED}@`) : redacted
}

/** Whether `text` has `length` characters in a row of those a key or a secret's base64 may be written in (letters, digits, `+`, `/`, `%`). */
function hasLongRun (text: string, length: number): boolean {
  let run = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    const inRun = (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 43 || code === 47 || code === 37
    run = inRun ? run + 1 : 0
    if (run >= length) return true
  }
  return false
}

// A URL's user and password (`http://user:password@host`): a request target in absolute form may hold
// them, and a token often goes as the user alone. The scheme is looked for behind a `://`, and is
// bounded: matched forwards, each start in a long run of `a.a.a...` scanned to its end (64 KiB took
// seconds).
const URL_CREDENTIALS = /(?<=\b[a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#@"'<>\\]+@/gi
