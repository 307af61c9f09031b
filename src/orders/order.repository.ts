import { isoNow, type Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { lockIdOrder } from '../db/id-order-lock.js'
import { recordEvents, type NewEvent } from '../events/event-log.js'
import type { ClaimedCreate } from '../idempotency/idempotent-create.js'
import { petOfRow } from '../store/pet-columns.js'
import type { IdempotencyClaim, StoredResponse } from '../store/pet-store.js'
import { createdResponse, findClaimedResponse, saveResponse } from '../store/stored-response.js'
import { ORDER_TRANSITIONS } from './order-transitions.js'
import type { Order, OrderStatus } from './order.schemas.js'

const ORDER_COLUMNS = ['id', 'pet_id as petId', 'status', 'created_at as createdAt', 'updated_at as updatedAt'] as const

// Names the lock that orders order ids (see lockIdOrder).
const ORDER_INSERT_LOCK = 7_340_002

export type PlaceOrderResult =
  | ClaimedCreate & { outcome: 'created', order: Order } |
  ClaimedCreate & { outcome: 'replayed' } |
  { outcome: 'pet_not_found' } |
  { outcome: 'pet_not_available' }

/**
 * Places an order for an available pet and makes the pet `pending`, with the events of both, and
 * records the answer under the idempotency claim when there is one, in one transaction. The pet is
 * claimed by a conditional update, so of concurrent orders for one pet (on any instance) exactly one
 * finds it `available`; the others change nothing. A claim whose key holds an answer already gets
 * that answer and places nothing.
 */
export async function placeOrder (db: Db, clock: Clock, petId: bigint, claim?: IdempotencyClaim): Promise<PlaceOrderResult> {
  try {
    return await db.transaction().execute(async (trx): Promise<PlaceOrderResult> => {
      if (claim !== undefined) {
        const stored = await findClaimedResponse(trx, claim)
        if (stored !== undefined) return { outcome: 'replayed', response: stored }
      }
      const pet = await trx.updateTable('pets').set({ status: 'pending' })
        .where('id', '=', petId).where('status', '=', 'available')
        .returningAll()
        .executeTakeFirst()
      if (pet === undefined) {
        const exists = await trx.selectFrom('pets').select('id').where('id', '=', petId).executeTakeFirst()
        return { outcome: exists === undefined ? 'pet_not_found' : 'pet_not_available' }
      }
      await lockIdOrder(trx, ORDER_INSERT_LOCK)
      const now = isoNow(clock)
      const order = await trx.insertInto('orders')
        .values({ pet_id: petId, status: 'placed', created_at: now, updated_at: now })
        .returning(ORDER_COLUMNS)
        .executeTakeFirstOrThrow()
      let response: StoredResponse | undefined
      if (claim !== undefined) {
        response = createdResponse(claim, order)
        await saveResponse(trx, claim, response, now)
      }
      // Last, as every transaction that records events (see recordEvents).
      await recordEvents(trx, now, [
        { type: 'order.placed', data: order },
        { type: 'pet.status_changed', data: { ...petOfRow(pet), previousStatus: 'available' } }
      ])
      return { outcome: 'created', order, response }
    })
  } catch (error) {
    // The partial unique index refused a second live order: the pet is taken.
    if (isSecondLiveOrder(error)) return { outcome: 'pet_not_available' }
    throw error
  }
}

export type MoveOrderResult =
  | { outcome: 'moved', order: Order } |
  { outcome: 'not_found' } |
  { outcome: 'invalid_transition', from: OrderStatus }

/**
 * Moves an order to `to` and its pet along with it, in one transaction, only from a status that
 * allows the move: the conditional update makes concurrent moves of one order apply at most once.
 */
export async function moveOrder (db: Db, clock: Clock, orderId: bigint, to: OrderStatus): Promise<MoveOrderResult> {
  const { from, petBecomes } = ORDER_TRANSITIONS[to]
  return await db.transaction().execute(async (trx): Promise<MoveOrderResult> => {
    const now = isoNow(clock)
    const order = from.length === 0 ?
      undefined :
        await trx.updateTable('orders').set({ status: to, updated_at: now })
          .where('id', '=', orderId).where('status', 'in', from)
          .returning(ORDER_COLUMNS)
          .executeTakeFirst()
    if (order === undefined) {
      const current = await trx.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirst()
      return current === undefined ? { outcome: 'not_found' } : { outcome: 'invalid_transition', from: current.status }
    }
    const events: NewEvent[] = [{ type: `order.${to}`, data: order }]
    if (petBecomes !== undefined) {
      const { status: previousStatus } = await trx.selectFrom('pets').select('status').where('id', '=', order.petId).executeTakeFirstOrThrow()
      const pet = await trx.updateTable('pets').set({ status: petBecomes }).where('id', '=', order.petId).returningAll().executeTakeFirstOrThrow()
      events.push({ type: 'pet.status_changed', data: { ...petOfRow(pet), previousStatus } })
    }
    await recordEvents(trx, now, events)
    return { outcome: 'moved', order }
  })
}

export async function findOrderById (db: Db, id: bigint): Promise<Order | undefined> {
  return await db.selectFrom('orders').select(ORDER_COLUMNS).where('id', '=', id).executeTakeFirst()
}

export interface OrderPage {
  orders: Order[]
  /** The id of the last order on the page, when more orders follow. */
  nextAfterId: bigint | undefined
}

export async function findOrderPage (db: Db, { status, afterId = 0n, limit }: { status: OrderStatus | undefined, afterId: bigint | undefined, limit: number }): Promise<OrderPage> {
  let query = db.selectFrom('orders').select(ORDER_COLUMNS).where('id', '>', afterId).orderBy('id').limit(limit + 1)
  if (status !== undefined) query = query.where('status', '=', status)
  const orders = await query.execute()
  if (orders.length <= limit) return { orders, nextAfterId: undefined }
  orders.length = limit
  return { orders, nextAfterId: orders[limit - 1]!.id }
}

/** Whether `orders_one_live_per_pet` refused an order: not another unique index of the transaction (an idempotency key's). */
function isSecondLiveOrder (error: unknown): boolean {
  const { code, constraint, message } = (error ?? {}) as { code?: unknown, constraint?: unknown, message?: unknown }
  return (code === '23505' && constraint === 'orders_one_live_per_pet') ||
    (code === 'SQLITE_CONSTRAINT_UNIQUE' && typeof message === 'string' && message.endsWith('orders.pet_id'))
}
