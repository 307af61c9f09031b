import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { percentEncodable } from '../percent-encodable.js'

/** Finds every signing secret in a text (a URL sent with one in it, say; percent-encoded too), to redact it. */
export const WEBHOOK_SECRETS_IN_TEXT = new RegExp(`${percentEncodable('whsec_')}[A-Za-z0-9+/=%]+`, 'gi')

/** A new signing secret in the Standard Webhooks form: `whsec_` and 24 random bytes in base64. */
export function newWebhookSecret (): string {
  return `whsec_${randomBytes(24).toString('base64')}`
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
