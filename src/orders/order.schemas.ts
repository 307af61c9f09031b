import { Type, type Static } from 'typebox'
import { PageCursor, PageLimit } from '../pagination/page-query.js'
import { Int64 } from '../validation/int64.js'

export const ORDER_STATUSES = ['placed', 'approved', 'delivered', 'cancelled'] as const
export const OrderStatus = Type.Enum(ORDER_STATUSES, {
  title: 'OrderStatus',
  type: 'string',
  description: '`placed` → `approved` → `delivered`; `placed` or `approved` → `cancelled`'
})
export type OrderStatus = Static<typeof OrderStatus>

const OrderId = Int64({ minimum: 1, description: 'Unique identifier assigned by the service', examples: [7] })
const PetId = Int64({ minimum: 1, description: 'Id of the animal ordered', examples: [42] })
const Timestamp = (description: string) => Type.String({ format: 'date-time', description, examples: ['2026-11-22T10:15:30.000Z'] })

const PLACED = { id: 7, petId: 42, status: 'placed', createdAt: '2026-11-22T10:15:30.000Z', updatedAt: '2026-11-22T10:15:30.000Z' }

export const NewOrder = Type.Object({ petId: PetId }, {
  title: 'NewOrder',
  additionalProperties: false,
  description: 'The animal to buy: it must be `available`, and becomes `pending`',
  examples: [{ petId: 42 }]
})
export type NewOrder = Static<typeof NewOrder>

export const Order = Type.Object({
  id: OrderId,
  petId: PetId,
  status: OrderStatus,
  createdAt: Timestamp('When the order was placed (RFC 3339, UTC)'),
  updatedAt: Timestamp('When the order last changed status (RFC 3339, UTC)')
}, { title: 'Order', additionalProperties: false, examples: [PLACED] })
export type Order = Static<typeof Order>

export const OrderList = Type.Array(Order, { examples: [[PLACED]] })

export const OrderStatusChange = Type.Object({ status: OrderStatus }, {
  additionalProperties: false,
  description: 'The status to move the order to',
  examples: [{ status: 'approved' }, { status: 'cancelled' }]
})
export type OrderStatusChange = Static<typeof OrderStatusChange>

export const ListOrdersQuery = Type.Object({
  limit: PageLimit('orders'),
  status: Type.Optional({ ...OrderStatus, description: 'Returns only orders with this status' }),
  cursor: PageCursor
}, { additionalProperties: false })

export const OrderIdParams = Type.Object({
  orderId: Int64({ minimum: 1, description: 'Id of the order', examples: [7] })
})
