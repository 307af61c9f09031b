import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { ApiError, errorExample, errorResponses, type ErrorResponse } from '../errors.js'
import { IdempotencyKeyHeaders } from '../idempotency/idempotency-key-header.js'
import type { IdempotentCreates } from '../idempotency/idempotent-create.js'
import type { CursorCodec } from '../pagination/cursor.js'
import { nextPageLink } from '../pagination/next-page-link.js'
import { afterIdOfCursor, DEFAULT_PAGE_LIMIT, PAGE_LIMIT_INVALID } from '../pagination/page-query.js'
import { responseHeaders } from '../openapi/response-headers.js'
import { sendStoredAnswer } from '../send-json.js'
import { ORDER_TRANSITIONS } from './order-transitions.js'
import { findOrderById, findOrderPage, moveOrder, placeOrder, type PlaceOrderResult } from './order.repository.js'
import { ListOrdersQuery, NewOrder, Order, OrderIdParams, OrderList, OrderStatusChange, type OrderStatus } from './order.schemas.js'

export interface OrderRoutesOptions {
  db: Db
  clock: Clock
  cursorCodec: CursorCodec<OrderStatus>
  idempotentCreates: IdempotentCreates
  /** Called after a change is committed, so that its events go out at once. */
  committed: () => void
  /** Turns a path under /v1 into the URL clients should follow. */
  apiUrl: (path: string) => string
}

const EXPERIMENTAL = { 'x-stability': 'experimental', tags: ['store'] } as const

const PET_ID_INVALID = errorExample(400, '`petId` must be an integer from 1 to 9223372036854775807')
const ORDER_ID_INVALID = errorExample(400, 'Path parameter `orderId` must be an integer from 1 to 9223372036854775807')
const ORDER_NOT_FOUND = errorExample(404, 'No order with id 7')
const PET_NOT_FOUND = {
  status: 422, description: 'No pet has this petId; or the `Idempotency-Key` was used before with another body', code: 'pet_not_found', example: 'No pet with id 42'
} as const
const PET_NOT_AVAILABLE = {
  status: 409,
  description: 'The pet is not available; or a request with the same `Idempotency-Key` is still being processed (`idempotency_key_in_use`, with `Retry-After`)',
  code: 'pet_not_available',
  example: 'Pet 42 is not available',
  headers: ['Retry-After']
} satisfies ErrorResponse
const INVALID_TRANSITION = {
  status: 409, description: 'The order cannot make this move; nothing changed', code: 'invalid_transition', example: 'Order 7 cannot move from delivered to cancelled'
} as const

/** Experimental store orders: placing one holds a pet, and its transitions sell or release it. */
export const orderRoutes: FastifyPluginAsyncTypebox<OrderRoutesOptions> = async (app, { db, clock, cursorCodec, idempotentCreates, committed, apiUrl }) => {
  const orderUrlPrefix = apiUrl('/store/orders/')

  app.post('/store/orders', {
    config: { scope: 'orders:write' },
    schema: {
      ...EXPERIMENTAL,
      operationId: 'createOrder',
      summary: 'Order an animal (experimental)',
      description: 'The animal must be `available`; in one transaction the order is `placed` and the animal becomes `pending`. ' +
        'Send an `Idempotency-Key` to make retries safe.',
      headers: IdempotencyKeyHeaders,
      body: NewOrder,
      response: {
        201: { ...Order, description: 'The order, `placed`; `Location` gives its URL', headers: responseHeaders('Location', 'Idempotent-Replayed') },
        ...errorResponses(PET_ID_INVALID, 401, 403, PET_NOT_AVAILABLE, 413, 415, PET_NOT_FOUND, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const { petId } = request.body
    const idempotencyKey = request.headers['idempotency-key']
    if (idempotencyKey === undefined) {
      const placed = placedOrFailed(await placeOrder(db, clock, petId), petId)
      if (placed.outcome !== 'created') throw new Error('an order without an idempotency key was replayed')
      committed()
      reply.code(201).header('location', `${orderUrlPrefix}${placed.order.id}`)
      return placed.order
    }
    const result = await idempotentCreates.create(request.apiKeyId, idempotencyKey, request.body, orderUrlPrefix,
      async (claim) => placedOrFailed(await placeOrder(db, clock, petId, claim), petId))
    if (!result.replayed) committed()
    return sendStoredAnswer(reply, result)
  })

  app.get('/store/orders', {
    config: { scope: 'orders:read' },
    schema: {
      ...EXPERIMENTAL,
      operationId: 'listOrders',
      summary: 'List orders (experimental)',
      description: 'Orders in ascending id order. When more follow, the response has a `Link` header with `rel="next"`.',
      querystring: ListOrdersQuery,
      response: { 200: { ...OrderList, description: 'A page of orders', headers: responseHeaders('Link') }, ...errorResponses(PAGE_LIMIT_INVALID, 401, 403, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { limit = DEFAULT_PAGE_LIMIT, status, cursor } = request.query
    const afterId = afterIdOfCursor(cursorCodec, cursor, { status })
    const page = await findOrderPage(db, { status, afterId, limit })
    if (page.nextAfterId !== undefined) {
      reply.header('link', nextPageLink(apiUrl, cursorCodec, { path: '/store/orders', limit, filter: { status }, afterId: page.nextAfterId }))
    }
    return page.orders
  })

  app.get('/store/orders/:orderId', {
    config: { scope: 'orders:read' },
    schema: {
      ...EXPERIMENTAL,
      operationId: 'getOrder',
      summary: 'Fetch one order (experimental)',
      description: 'The order with this id, in its current status.',
      params: OrderIdParams,
      response: { 200: { ...Order, description: 'The order' }, ...errorResponses(ORDER_ID_INVALID, 401, 403, ORDER_NOT_FOUND, 429, 500, 503) }
    }
  }, async (request) => {
    const { orderId } = request.params
    const order = await findOrderById(db, orderId)
    if (order === undefined) throw new ApiError(404, 'not_found', `No order with id ${orderId}`)
    return order
  })

  app.patch('/store/orders/:orderId', {
    config: { scope: 'orders:write' },
    schema: {
      ...EXPERIMENTAL,
      operationId: 'updateOrderStatus',
      summary: 'Move an order to another status (experimental)',
      description: 'Allowed moves: ' + Object.entries(ORDER_TRANSITIONS)
        .flatMap(([to, { from, petBecomes }]) => from.map((status) => `\`${status}\` → \`${to}\`${petBecomes === undefined ? '' : ` (the animal becomes \`${petBecomes}\`)`}`))
        .join('; ') + '. Any other move answers 409 `invalid_transition` and changes nothing.',
      params: OrderIdParams,
      body: OrderStatusChange,
      response: {
        200: { ...Order, description: 'The order in its new status' },
        ...errorResponses(ORDER_ID_INVALID, 401, 403, ORDER_NOT_FOUND, INVALID_TRANSITION, 413, 415, 429, 500, 503)
      }
    }
  }, async (request) => {
    const { orderId } = request.params
    const { status } = request.body
    const result = await moveOrder(db, clock, orderId, status)
    if (result.outcome === 'not_found') throw new ApiError(404, 'not_found', `No order with id ${orderId}`)
    if (result.outcome === 'invalid_transition') {
      throw new ApiError(409, 'invalid_transition', `Order ${orderId} cannot move from ${result.from} to ${status}`)
    }
    committed()
    return result.order
  })
}

/** An order placed or replayed; the errors of a pet that cannot be ordered (not stored under an idempotency key). */
function placedOrFailed (result: PlaceOrderResult, petId: bigint): Exclude<PlaceOrderResult, { outcome: 'pet_not_found' | 'pet_not_available' }> {
  if (result.outcome === 'pet_not_found') throw new ApiError(422, 'pet_not_found', `No pet with id ${petId}`)
  if (result.outcome === 'pet_not_available') throw new ApiError(409, 'pet_not_available', `Pet ${petId} is not available`)
  return result
}
