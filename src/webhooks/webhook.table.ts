import type { Generated } from 'kysely'

export type WebhookState = 'enabled' | 'disabled'

/**
 * The `webhooks` table: one row per subscription, which is also its delivery queue. Events are
 * delivered in id order: `delivered_through` is the last event handled (delivered, or not of its
 * types), `attempt` counts the failed attempts of the next one, and an instance works a subscription
 * only while it holds its lease.
 */
export interface WebhookTable {
  id: Generated<bigint>
  url: string
  /** Space-separated event types, or `*`. */
  event_types: string
  description: string | null
  state: WebhookState
  disabled_reason: string | null
  last_error: string | null
  /** The signing secret (whsec_…): HMAC needs it as it is, so it is kept, and shown only when made. */
  secret: string
  /** The secret before the last rotation, still signing until `previous_secret_until`. */
  previous_secret: string | null
  previous_secret_until: string | null
  delivered_through: bigint
  attempt: number
  /** Times are RFC 3339 UTC, compared as text. */
  next_attempt_at: string
  /** The empty string when no instance holds it. */
  lease_until: string
  lease_token: string | null
  created_at: string
  updated_at: string
}

/** The `webhook_deliveries` table: the log of delivery attempts. */
export interface WebhookDeliveryTable {
  id: Generated<bigint>
  webhook_id: bigint
  event_id: bigint
  attempt: number
  attempted_at: string
  response_status: number | null
  error: string | null
  duration_ms: number
}

/** The `webhook_redeliveries` table: events asked for again (POST …/retry) after they were delivered. */
export interface WebhookRedeliveryTable {
  id: Generated<bigint>
  webhook_id: bigint
  event_id: bigint
  lease_until: string
}
