import type { Generated } from 'kysely'
import type { EventType } from './event.schemas.js'

/** The `events` table, the event log: one row per change, written in the change's own transaction. */
export interface EventTable {
  /** Committed in increasing order on both stores (see recordEvents). */
  id: Generated<bigint>
  type: EventType
  /** RFC 3339 UTC. */
  occurred_at: string
  /** The resource as the API answers it after the change, JSON text. */
  data: string
}
