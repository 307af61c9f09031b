import type { Generated } from 'kysely'
import type { OrderStatus } from './order.schemas.js'

/** The `orders` table: at most one live (`placed` or `approved`) order per pet, by a partial unique index. */
export interface OrderTable {
  id: Generated<bigint>
  pet_id: bigint
  status: OrderStatus
  /** RFC 3339 UTC, written by the service. */
  created_at: string
  updated_at: string
}
