import { randomFillSync } from 'node:crypto'
import { crc32 } from 'node:zlib'
import { Webhook } from 'standardwebhooks'
import { percentEncodable } from '../percent-encodable.js'

const PREFIX = 'whsec_'
// A secret's key: 20 random bytes (160 bits) and their CRC32, so that its base64 can be told without
// its prefix, as a receiver holds it (Standard Webhooks libraries drop `whsec_`), as a key's can.
const RANDOM_BYTES = 20
const KEY_BYTES = RANDOM_BYTES + 4
const KEY_CHARS = KEY_BYTES / 3 * 4
/** The fewest characters a secret's key is written in, without its prefix (fewer than an API key's 38). */
export const UNPREFIXED_SECRET_CHARS = KEY_CHARS
const PREFIX_CRC32 = crc32(PREFIX)

/** Finds every signing secret in a text (a URL sent with one in it, say; percent-encoded too), to redact it. */
export const WEBHOOK_SECRETS_IN_TEXT = new RegExp(`${percentEncodable(PREFIX)}[A-Za-z0-9+/=%]+`, 'gi')

/**
 * Finds the runs of base64 characters and `%` (`+` and `/` may come percent-encoded) that may hold a
 * secret's key without its prefix: containsWebhookSecretWithoutPrefix tells them from other runs by
 * the checksum. (One character class: an alternation with `%2B` doubled the cost of every log line.)
 */
export const UNPREFIXED_SECRET_RUNS = new RegExp(`[A-Za-z0-9+/%]{${KEY_CHARS},}`, 'g')

/** A new signing secret in the Standard Webhooks form: `whsec_` and its key, 24 bytes, in base64. */
export function newWebhookSecret (): string {
  const key = Buffer.alloc(KEY_BYTES)
  randomFillSync(key, 0, RANDOM_BYTES)
  key.writeUInt32BE(crc32(key.subarray(0, RANDOM_BYTES), PREFIX_CRC32), RANDOM_BYTES)
  return `${PREFIX}${key.toString('base64')}`
}

/**
 * True when `text`, a run of base64 characters, holds a secret's key at any place (a secret made
 * before its keys had a checksum, on 6 December 2026, is not told). Decoded once for each of the four
 * places a base64 quantum may start at, then looked at every three bytes: a 16 KiB run (a request's
 * head at most) costs some 4 ms, and runs this long are rare (withoutSecrets looks for them by hand).
 */
export function containsWebhookSecretWithoutPrefix (text: string): boolean {
  const run = text.includes('%') ? percentDecoded(text) : text
  for (let start = 0; start < 4 && start + KEY_CHARS <= run.length; start++) {
    const bytes = Buffer.from(run.slice(start, start + Math.floor((run.length - start) / 4) * 4), 'base64')
    for (let at = 0; at + KEY_BYTES <= bytes.length; at += 3) {
      if (crc32(bytes.subarray(at, at + RANDOM_BYTES), PREFIX_CRC32) === bytes.readUInt32BE(at + RANDOM_BYTES)) return true
    }
  }
  return false
}

/** `text` with `%2B` and `%2F` decoded, as a URL encoder writes a base64 `+` and `/`. */
function percentDecoded (text: string): string {
  return text.replace(/%2B/gi, '+').replace(/%2F/gi, '/')
}

/** The Standard Webhooks headers of one attempt. */
export interface SignatureHeaders {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

/**
 * Signs a delivery with each secret (the current one first, then the one rotated out while it still
 * signs), space-separated as the convention allows, so receivers holding either verify it.
 */
export function signDelivery (secrets: readonly string[], messageId: string, at: Date, body: string): SignatureHeaders {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(' ')
  }
}

/**
 * The `webhook-id` of an event for a subscription: the same on every attempt, so receivers can drop
 * repeats, and unique across stores (the installation's id first), so that a receiver subscribed from
 * two (staging and production, say) never drops one's event as a repeat of the other's.
 */
export function messageIdOf (installationId: string, webhookId: bigint, eventId: bigint): string {
  return `msg_${installationId}_${webhookId}_${eventId}`
}
