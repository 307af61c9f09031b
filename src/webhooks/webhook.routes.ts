import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { ApiError, errorExample, errorResponses, type ErrorResponse } from '../errors.js'
import { findEvent } from '../events/event.repository.js'
import { IdempotencyKeyHeaders } from '../idempotency/idempotency-key-header.js'
import type { IdempotentCreates } from '../idempotency/idempotent-create.js'
import { responseHeaders } from '../openapi/response-headers.js'
import type { CursorCodec } from '../pagination/cursor.js'
import { nextPageLink } from '../pagination/next-page-link.js'
import { afterIdOfCursor, DEFAULT_PAGE_LIMIT, PAGE_LIMIT_INVALID } from '../pagination/page-query.js'
import { sendStoredAnswer } from '../send-json.js'
import { checkWebhookUrl } from './webhook-url.js'
import type { WebhookNetwork } from './webhook-transport.js'
import {
  createWebhook, deleteWebhook, findDeliveredEventId, findDeliveryPage, findWebhookById, findWebhookPage, queueRedelivery, rotateWebhookSecret,
  updateWebhook
} from './webhook.repository.js'
import {
  CreatedWebhook, DeliveryIdParams, ListDeliveriesQuery, ListWebhooksQuery, NewWebhook, RetryQueued, RotatedSecret, Webhook, WebhookChanges,
  WebhookDeliveryList, WebhookIdParams, WebhookList
} from './webhook.schemas.js'

export interface WebhookRoutesOptions {
  db: Db
  clock: Clock
  webhooksCursor: CursorCodec<never>
  /** The cursors of one subscription's deliveries log: refused for another's. */
  deliveriesCursor: (webhookId: bigint) => CursorCodec<never>
  idempotentCreates: IdempotentCreates
  network: WebhookNetwork
  allowPrivate: boolean
  /** Subscriptions there may be, on all instances together. */
  maxWebhooks: number
  /** Retries asked for and not yet made, per subscription. */
  maxQueuedRetries: number
  /** Turns a path under /v1 into the URL clients should follow. */
  apiUrl: (path: string) => string
}

const BETA = { 'x-stability': 'beta', tags: ['webhooks'] } as const

const URL_REFUSED = {
  status: 422,
  description: 'The URL is refused: not https, with credentials, port 0 or a fragment, or naming or resolving to an address that is not public; nothing was stored',
  code: 'webhook_url_refused',
  example: 'The webhook URL is refused: hooks.internal resolves to 10.0.0.7, which is not a public address; webhooks reach public addresses only'
} as const
const LIMIT_REACHED = {
  status: 409,
  description: 'There are as many subscriptions as there may be (100); or a request with the same `Idempotency-Key` is still being processed (`idempotency_key_in_use`, with `Retry-After`)',
  code: 'webhook_limit_reached',
  example: 'There are 100 webhooks, the most there may be; delete one first',
  headers: ['Retry-After']
} satisfies ErrorResponse
const URL_REFUSED_OR_KEY_REUSED = { ...URL_REFUSED, description: `${URL_REFUSED.description}; or the \`Idempotency-Key\` was used before with another body` }
const RETRIES_QUEUED: ErrorResponse = {
  status: 429,
  description: 'Too many requests, or 100 retries of this subscription are queued already',
  code: 'rate_limited',
  example: '100 retries of webhook 7 are queued already; retry once they are made',
  headers: ['Retry-After']
}
const WEBHOOK_ID_INVALID = errorExample(400, 'Path parameter `webhookId` must be an integer from 1 to 9223372036854775807')
const WEBHOOK_NOT_FOUND = errorExample(404, 'No webhook with id 7')
const DELIVERY_NOT_FOUND = errorExample(404, 'No delivery with id 311 of webhook 7')
const EVENT_EXPIRED = {
  status: 410,
  description: 'The attempt\'s event is no longer kept in the event log, so it cannot be sent again',
  code: 'events_expired',
  example: 'Event 1042 is no longer kept; it cannot be sent again'
} as const

function webhookNotFound (id: bigint): ApiError {
  return new ApiError(404, 'not_found', `No webhook with id ${id}`)
}

/** What an operation found of a subscription, or its 404. */
function orNotFound<T> (found: T | undefined, id: bigint): T {
  if (found === undefined) throw webhookNotFound(id)
  return found
}

function limitReached (limit: number): ApiError {
  return new ApiError(409, 'webhook_limit_reached', `There are ${limit} webhooks, the most there may be; delete one first`)
}

/** Webhooks (beta): subscriptions that have events POSTed to a URL, signed after Standard Webhooks. */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (app, options) => {
  const { db, clock, webhooksCursor, deliveriesCursor, idempotentCreates, network, allowPrivate, maxWebhooks, maxQueuedRetries, apiUrl } = options
  const webhookUrlPrefix = apiUrl('/webhooks/')

  app.post('/webhooks', {
    config: { scope: 'webhooks:write' },
    schema: {
      ...BETA,
      operationId: 'createWebhook',
      summary: 'Subscribe a URL to events (beta)',
      description: 'Events committed from now on whose type is listed are POSTed to the URL, one at a time in id order, signed after Standard Webhooks ' +
        '(there may be 100 subscriptions) ' +
        '(`webhook-id`, `webhook-timestamp`, `webhook-signature`). The answer holds the signing secret, shown this once ' +
        '(and to a retry with the same `Idempotency-Key` within 24 hours). Send an `Idempotency-Key` to make retries safe. ' +
        'So a key with `webhooks:write` has the events delivered where it says, `events:read` or not, as webhook permissions elsewhere do.',
      headers: IdempotencyKeyHeaders,
      body: NewWebhook,
      response: {
        201: { ...CreatedWebhook, description: 'The subscription with its secret; `Location` gives its URL', headers: responseHeaders('Location', 'Idempotent-Replayed') },
        ...errorResponses(errorExample(400, '`events[0]` must be one of pet.created, pet.status_changed, category.created, order.placed, order.approved, order.delivered, order.cancelled, *'),
          401, 403, LIMIT_REACHED, 413, 415, URL_REFUSED_OR_KEY_REUSED, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const subscription = { ...request.body, url: await checkWebhookUrl(request.body.url, network, allowPrivate) }
    const idempotencyKey = request.headers['idempotency-key']
    if (idempotencyKey === undefined) {
      const created = await createWebhook(db, clock, subscription, maxWebhooks)
      if (created.outcome === 'limit_reached') throw limitReached(maxWebhooks)
      if (created.outcome !== 'created') throw new Error('a create without an idempotency key was replayed')
      reply.code(201).header('location', `${webhookUrlPrefix}${created.webhook.id}`)
      return created.webhook
    }
    const result = await idempotentCreates.create(request.apiKeyId, idempotencyKey, request.body, webhookUrlPrefix, async (claim) => {
      const created = await createWebhook(db, clock, subscription, maxWebhooks, claim)
      if (created.outcome === 'limit_reached') throw limitReached(maxWebhooks)
      return created
    })
    return sendStoredAnswer(reply, result)
  })

  app.get('/webhooks', {
    config: { scope: 'webhooks:read' },
    schema: {
      ...BETA,
      operationId: 'listWebhooks',
      summary: 'List subscriptions (beta)',
      description: 'Subscriptions in ascending id order, without their secrets. When more follow, the response has a `Link` header with `rel="next"`.',
      querystring: ListWebhooksQuery,
      response: { 200: { ...WebhookList, description: 'A page of subscriptions', headers: responseHeaders('Link') }, ...errorResponses(PAGE_LIMIT_INVALID, 401, 403, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { limit = DEFAULT_PAGE_LIMIT, cursor } = request.query
    const page = await findWebhookPage(db, { afterId: afterIdOfCursor(webhooksCursor, cursor, {}), limit })
    if (page.nextAfterId !== undefined) {
      reply.header('link', nextPageLink(apiUrl, webhooksCursor, { path: '/webhooks', limit, filter: {}, afterId: page.nextAfterId }))
    }
    return page.webhooks
  })

  app.get('/webhooks/:webhookId', {
    config: { scope: 'webhooks:read' },
    schema: {
      ...BETA,
      operationId: 'getWebhook',
      summary: 'Fetch one subscription (beta)',
      description: 'The subscription with this id, without its secret: whether it is enabled, and why not.',
      params: WebhookIdParams,
      response: { 200: { ...Webhook, description: 'The subscription' }, ...errorResponses(WEBHOOK_ID_INVALID, 401, 403, WEBHOOK_NOT_FOUND, 429, 500, 503) }
    }
  }, async (request) => {
    const { webhookId } = request.params
    return orNotFound(await findWebhookById(db, webhookId), webhookId)
  })

  app.patch('/webhooks/:webhookId', {
    config: { scope: 'webhooks:write' },
    schema: {
      ...BETA,
      operationId: 'updateWebhook',
      summary: 'Change a subscription (beta)',
      description: 'Changes the URL, the event types, the description, or whether it is enabled. Enabling a disabled subscription resumes delivery ' +
        'at once from its first event not delivered (events the event log no longer keeps are skipped).',
      params: WebhookIdParams,
      body: WebhookChanges,
      response: {
        200: { ...Webhook, description: 'The subscription as changed' },
        ...errorResponses(WEBHOOK_ID_INVALID, 401, 403, WEBHOOK_NOT_FOUND, 413, 415, URL_REFUSED, 429, 500, 503)
      }
    }
  }, async (request) => {
    const { webhookId } = request.params
    const changes = request.body.url === undefined ? request.body : { ...request.body, url: await checkWebhookUrl(request.body.url, network, allowPrivate) }
    return orNotFound(await updateWebhook(db, clock, webhookId, changes), webhookId)
  })

  app.delete('/webhooks/:webhookId', {
    config: { scope: 'webhooks:write' },
    schema: {
      ...BETA,
      operationId: 'deleteWebhook',
      summary: 'Delete a subscription (beta)',
      description: 'Deletes the subscription and its deliveries log; nothing more is sent to it (an attempt in flight completes).',
      params: WebhookIdParams,
      response: { 204: { description: 'Deleted' }, ...errorResponses(WEBHOOK_ID_INVALID, 401, 403, WEBHOOK_NOT_FOUND, 413, 415, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { webhookId } = request.params
    if (!await deleteWebhook(db, webhookId)) throw webhookNotFound(webhookId)
    return reply.code(204).send()
  })

  app.post('/webhooks/:webhookId/rotate-secret', {
    config: { scope: 'webhooks:write' },
    schema: {
      ...BETA,
      operationId: 'rotateWebhookSecret',
      summary: 'Replace a subscription\'s signing secret (beta)',
      description: 'Makes a new secret, shown this once. For 24 hours deliveries carry two signatures, one with each secret, space-separated in ' +
        '`webhook-signature`, so the receiver can switch to the new secret without failing a delivery.',
      params: WebhookIdParams,
      response: { 200: { ...RotatedSecret, description: 'The new secret' }, ...errorResponses(WEBHOOK_ID_INVALID, 401, 403, WEBHOOK_NOT_FOUND, 413, 415, 429, 500, 503) }
    }
  }, async (request) => {
    const { webhookId } = request.params
    return orNotFound(await rotateWebhookSecret(db, clock, webhookId), webhookId)
  })

  app.get('/webhooks/:webhookId/deliveries', {
    config: { scope: 'webhooks:read' },
    schema: {
      ...BETA,
      operationId: 'listWebhookDeliveries',
      summary: 'List a subscription\'s delivery attempts (beta)',
      description: 'Attempts newest first: the event, which attempt at it, when, and the receiver\'s status or the failure. ' +
        'Attempts are kept as long as events (`EVENT_RETENTION_DAYS`). When more follow, the response has a `Link` header with `rel="next"`.',
      params: WebhookIdParams,
      querystring: ListDeliveriesQuery,
      response: {
        200: { ...WebhookDeliveryList, description: 'A page of attempts', headers: responseHeaders('Link') },
        ...errorResponses(PAGE_LIMIT_INVALID, 401, 403, WEBHOOK_NOT_FOUND, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const { webhookId } = request.params
    const { limit = DEFAULT_PAGE_LIMIT, cursor } = request.query
    if (await findWebhookById(db, webhookId) === undefined) throw webhookNotFound(webhookId)
    const cursors = deliveriesCursor(webhookId)
    const page = await findDeliveryPage(db, webhookId, { beforeId: afterIdOfCursor(cursors, cursor, {}), limit })
    if (page.nextBeforeId !== undefined) {
      reply.header('link', nextPageLink(apiUrl, cursors, { path: `/webhooks/${webhookId}/deliveries`, limit, filter: {}, afterId: page.nextBeforeId }))
    }
    return page.deliveries
  })

  app.post('/webhooks/:webhookId/deliveries/:deliveryId/retry', {
    config: { scope: 'webhooks:write' },
    schema: {
      ...BETA,
      operationId: 'retryWebhookDelivery',
      summary: 'Send an attempt\'s event again (beta)',
      description: 'Queues one more attempt at the event of this attempt, with the same `webhook-id`, whatever the subscription\'s state ' +
        '(once, however often it is asked while queued; 100 queued per subscription at most); it is made by any instance, usually within a second, ' +
        'and appears in the deliveries log. It does not change the subscription\'s own schedule: to resume a disabled subscription, enable it with PATCH.',
      params: DeliveryIdParams,
      response: {
        202: { ...RetryQueued, description: 'The attempt is queued' },
        ...errorResponses(errorExample(400, 'Path parameter `deliveryId` must be an integer from 1 to 9223372036854775807'), 401, 403, DELIVERY_NOT_FOUND, EVENT_EXPIRED, 413, 415, RETRIES_QUEUED, 500, 503)
      }
    }
  }, async (request, reply) => {
    const { webhookId, deliveryId } = request.params
    const noSuchDelivery = new ApiError(404, 'not_found', `No delivery with id ${deliveryId} of webhook ${webhookId}`)
    const eventId = await findDeliveredEventId(db, webhookId, deliveryId)
    if (eventId === undefined) throw noSuchDelivery
    if (await findEvent(db, eventId) === undefined) throw new ApiError(410, 'events_expired', `Event ${eventId} is no longer kept; it cannot be sent again`)
    const queued = await queueRedelivery(db, webhookId, eventId, maxQueuedRetries)
    // Deleted meanwhile, with its deliveries log.
    if (queued === 'gone') throw noSuchDelivery
    if (queued === 'full') {
      throw new ApiError(429, 'rate_limited', `${maxQueuedRetries} retries of webhook ${webhookId} are queued already; retry once they are made`, {
        headers: { 'retry-after': '10' }
      })
    }
    return reply.code(202).send({ webhookId, eventId })
  })
}
