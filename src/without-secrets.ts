import { API_KEYS_IN_TEXT, containsApiKeyWithoutPrefix, UNPREFIXED_API_KEYS } from './api-keys/api-key.service.js'
import { WEBHOOK_SECRETS_IN_TEXT } from './webhooks/webhook-signature.js'

/** What a secret is written as. */
export const REDACTED = '[redacted]'

/**
 * A text with every API key and webhook secret in it, as it is or percent-encoded, written
 * `[redacted]`: for what is written out of what a request sent (a key pasted into a URL, a field name
 * or a header, say), in a log line or an answer. Keys first, in a pass of their own: one pattern for
 * both would let a secret's match take a key's prefix after `whsec_` (a key pasted where a secret
 * goes) and leave the rest of the key in the text. A key without its prefix is found by its checksum, in a run of letters and digits.
 */
export function withoutSecrets (text: string): string {
  return text.replace(API_KEYS_IN_TEXT, REDACTED)
    .replace(UNPREFIXED_API_KEYS, (run) => containsApiKeyWithoutPrefix(run) ? REDACTED : run)
    .replace(WEBHOOK_SECRETS_IN_TEXT, REDACTED)
}
