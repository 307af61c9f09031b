import type { PetStatus } from '../pets/pet.schemas.js'
import type { OrderStatus } from './order.schemas.js'

/**
 * The moves an order may make, keyed by the status it moves to: the statuses it may come from, and
 * what the move makes of its pet (nothing when undefined).
 */
export const ORDER_TRANSITIONS: Readonly<Record<OrderStatus, { from: readonly OrderStatus[], petBecomes?: PetStatus }>> = {
  placed: { from: [] },
  approved: { from: ['placed'] },
  delivered: { from: ['approved'], petBecomes: 'sold' },
  cancelled: { from: ['placed', 'approved'], petBecomes: 'available' }
}
