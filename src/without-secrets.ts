import { API_KEYS_IN_TEXT, containsApiKeyWithoutPrefix, UNPREFIXED_KEY_RUNS } from './api-keys/api-key.service.js'
import { WEBHOOK_SECRETS_IN_TEXT } from './webhooks/webhook-signature.js'

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
 * in the text.
 */
export function withoutSecrets (text: string): string {
  return text.replace(UNPREFIXED_KEY_RUNS, (run) => containsApiKeyWithoutPrefix(run) ? REDACTED : run)
    .replace(API_KEYS_IN_TEXT, REDACTED)
    .replace(WEBHOOK_SECRETS_IN_TEXT, REDACTED)
    .replace(URL_CREDENTIALS, `${REDACTED}@`)
}

// A URL's user and password (`http://user:password@host`): a request target in absolute form may hold
// them, and a token often goes as the user alone. The scheme is looked for behind a `://`, and is
// bounded: matched forwards, each start in a long run of `a.a.a...` scanned to its end (64 KiB took
// seconds).
const URL_CREDENTIALS = /(?<=\b[a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#@"'<>\\]+@/gi
