import { Type, type Static } from 'typebox'
import { EVENT_TYPES } from '../events/event.schemas.js'
import { PageCursor, PageLimit } from '../pagination/page-query.js'
import { Int64 } from '../validation/int64.js'
import { WELL_FORMED_TEXT } from '../validation/validation-error-message.js'

const WebhookId = Int64({ minimum: 1, description: 'Unique identifier assigned by the service on creation', examples: [7] })
const EventId = Int64({ minimum: 1, description: 'The id of the event, as in the event log', examples: [1042] })
const Time = (description: string) => Type.String({ format: 'date-time', description, examples: ['2026-11-24T10:15:30.000Z'] })
const Nullable = (schema: ReturnType<typeof Type.String>) => Type.Union([schema, Type.Null()])

/** The longest URL a subscription takes, as sent and as parsed (the form stored). */
export const MAX_WEBHOOK_URL_LENGTH = 2048

const Url = Type.String({
  minLength: 1,
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  pattern: WELL_FORMED_TEXT,
  description: 'Where events are POSTed: an `https` URL whose host resolves to public addresses only; redirects are not followed. Stored as parsed (`HTTPS://Hooks.Example.com` is `https://hooks.example.com/`)',
  examples: ['https://hooks.example.com/petstore']
})
const EventTypes = Type.Array(Type.Enum([...EVENT_TYPES, '*'], { type: 'string' }), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  uniqueItems: true,
  description: 'The event types delivered, or `["*"]` for every type, those added later included',
  examples: [['pet.created', 'pet.status_changed']]
})
const Description = Type.String({ maxLength: 500, pattern: WELL_FORMED_TEXT, description: 'A note for people; not used by the service (well-formed Unicode, without U+0000)', examples: ['Stock sync'] })
const Secret = Type.String({
  pattern: '^whsec_[A-Za-z0-9+/=]+$',
  description: 'The signing secret (Standard Webhooks): give it to the receiver\'s verification library. Shown only here; it cannot be read again',
  examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']
})

const HOOK = {
  id: 7,
  url: 'https://hooks.example.com/petstore',
  events: ['pet.created', 'pet.status_changed'],
  description: 'Stock sync',
  enabled: true,
  disabledReason: null,
  lastError: null,
  createdAt: '2026-11-24T10:15:30.000Z'
}

export const NewWebhook = Type.Object({
  url: Url,
  events: EventTypes,
  // null too, as a subscription is answered: a body made from one is taken back.
  description: Type.Optional(Nullable(Description))
}, {
  title: 'NewWebhook',
  additionalProperties: false,
  description: 'Request body for subscribing a URL to events',
  examples: [{ url: HOOK.url, events: HOOK.events, description: HOOK.description }]
})
export type NewWebhook = Static<typeof NewWebhook>

const webhookProperties = {
  id: WebhookId,
  url: { ...Url, description: 'Where events are POSTed' },
  events: EventTypes,
  description: Nullable(Description),
  enabled: Type.Boolean({ description: 'Whether events are delivered; a subscription is disabled by PATCH, by a 410 from the receiver, or when every retry of an event failed' }),
  disabledReason: Nullable(Type.String({ description: 'Why the service disabled it; null while enabled or when disabled by PATCH', examples: ['The receiver answered 410 Gone'] })),
  lastError: Nullable(Type.String({ description: 'The outcome of the last failed attempt', examples: ['HTTP 503'] })),
  createdAt: Time('When it was created')
}

export const Webhook = Type.Object(webhookProperties, { title: 'Webhook', additionalProperties: false, examples: [HOOK] })
export type Webhook = Static<typeof Webhook>

export const CreatedWebhook = Type.Object({ ...webhookProperties, secret: Secret }, {
  title: 'CreatedWebhook',
  additionalProperties: false,
  description: 'The subscription, with its signing secret shown this once',
  examples: [{ ...HOOK, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }]
})

export const WebhookList = Type.Array(Webhook, { examples: [[HOOK]] })

export const WebhookChanges = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(EventTypes),
  description: Type.Optional(Nullable(Description)),
  enabled: Type.Optional(Type.Boolean({ description: 'true resumes delivery from the first event not yet delivered, at once; false pauses it' }))
}, {
  title: 'WebhookChanges',
  additionalProperties: false,
  minProperties: 1,
  description: 'The fields to change; the others keep their values',
  examples: [{ enabled: true }, { events: ['*'] }]
})
export type WebhookChanges = Static<typeof WebhookChanges>

export const RotatedSecret = Type.Object({
  secret: Secret,
  previousSecretExpiresAt: Time('Until then deliveries are signed with both secrets, so receivers can switch without missing one')
}, { title: 'RotatedSecret', additionalProperties: false, examples: [{ secret: 'whsec_Z2V0IHlvdXIgb3duIHNlY3JldCBwbGVhc2U=', previousSecretExpiresAt: '2026-11-25T10:15:30.000Z' }] })

const DELIVERY = { id: 311, eventId: 1042, attempt: 1, attemptedAt: '2026-11-24T10:15:30.120Z', responseStatus: 200, error: null, durationMs: 38 }

export const WebhookDelivery = Type.Object({
  id: Int64({ minimum: 1, description: 'Identifies the attempt', examples: [311] }),
  eventId: EventId,
  attempt: Type.Integer({ minimum: 1, description: 'Which attempt at this event it was, from 1', examples: [1] }),
  attemptedAt: Time('When the request was sent'),
  responseStatus: Type.Union([Type.Integer({ minimum: 100, maximum: 599 }), Type.Null()], { description: 'The receiver\'s status; null when it did not answer' }),
  error: Nullable(Type.String({ description: 'Why the attempt failed; null when it succeeded (a 2xx)', examples: ['no answer within the timeout'] })),
  durationMs: Type.Integer({ minimum: 0, description: 'From sending the request to the receiver\'s status line (its body is not awaited), or to the failure', examples: [38] })
}, { title: 'WebhookDelivery', additionalProperties: false, examples: [DELIVERY] })
export type WebhookDelivery = Static<typeof WebhookDelivery>

export const WebhookDeliveryList = Type.Array(WebhookDelivery, { examples: [[DELIVERY]] })

export const RetryQueued = Type.Object({
  webhookId: WebhookId,
  eventId: EventId
}, { title: 'RetryQueued', additionalProperties: false, description: 'The event is sent once more, within a second or so; the attempt appears in the deliveries log', examples: [{ webhookId: 7, eventId: 1042 }] })

export const WebhookIdParams = Type.Object({
  webhookId: Int64({ minimum: 1, description: 'Id of the subscription', examples: [7] })
})

export const DeliveryIdParams = Type.Object({
  webhookId: Int64({ minimum: 1, description: 'Id of the subscription', examples: [7] }),
  deliveryId: Int64({ minimum: 1, description: 'Id of the attempt, from the deliveries log', examples: [311] })
})

export const ListWebhooksQuery = Type.Object({ limit: PageLimit('subscriptions'), cursor: PageCursor }, { additionalProperties: false })
export const ListDeliveriesQuery = Type.Object({ limit: PageLimit('attempts'), cursor: PageCursor }, { additionalProperties: false })
