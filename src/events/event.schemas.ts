import { Type, type Static } from 'typebox'
import { Category } from '../categories/category.schemas.js'
import { Order } from '../orders/order.schemas.js'
import { Pet, PetStatus } from '../pets/pet.schemas.js'
import { Int64 } from '../validation/int64.js'

export const EVENT_TYPES = [
  'pet.created', 'pet.status_changed', 'category.created', 'order.placed', 'order.approved', 'order.delivered', 'order.cancelled'
] as const
export type EventType = typeof EVENT_TYPES[number]

const EventId = Int64({ minimum: 1, description: 'Increases with every event; a consumer keeps the last one it handled and reads after it', examples: [1042] })
const OccurredAt = Type.String({
  format: 'date-time',
  description: 'When the change was made (RFC 3339, UTC), by the store\'s clock (on PostgreSQL, the database server\'s): ids, not these times, give the order',
  examples: ['2026-11-24T10:15:30.000Z']
})

const CREATED = { id: 1042, type: 'pet.created', occurredAt: '2026-11-24T10:15:30.000Z', data: { id: 42, name: 'Rex', categoryId: 3, status: 'available' } }
const STATUS_CHANGED = {
  id: 1044,
  type: 'pet.status_changed',
  occurredAt: '2026-11-24T10:16:02.000Z',
  data: { id: 42, name: 'Rex', categoryId: 3, status: 'pending', previousStatus: 'available' }
}

/** One event of each kind: `data` is the resource as the API answers it after the change. */
function EventOf<Types extends EventType[], Data extends object> (types: [...Types], data: Data, description: string) {
  return Type.Object({
    id: EventId,
    type: Type.Enum(types, { type: 'string' }),
    occurredAt: OccurredAt,
    data
  }, { additionalProperties: false, description })
}

export const Event = Type.Union([
  EventOf(['pet.created'], Pet, 'An animal was created (by createPet or `pets import`)'),
  EventOf(['pet.status_changed'], Type.Object({
    ...Pet.properties,
    previousStatus: { ...PetStatus, description: 'The status before the change' }
  }, { additionalProperties: false }), "An animal's status changed (an order held, sold or released it)"),
  EventOf(['category.created'], Category, 'A category was created'),
  EventOf(['order.placed', 'order.approved', 'order.delivered', 'order.cancelled'], Order, 'An order was placed or moved (experimental orders)')
], {
  title: 'Event',
  description: 'A change to one resource; consumers must ignore event types they do not know',
  examples: [CREATED]
})
export type Event = Static<typeof Event>

export const EventList = Type.Array(Event, { examples: [[CREATED, STATUS_CHANGED]] })

const MAX_EVENTS_PER_PAGE = 1000
export const DEFAULT_EVENTS_PER_PAGE = 100

// Optional filters and positions carry no example: /docs's Try it out fills a parameter with its
// example and sends it (after=1041, a 400 on a store with fewer events).
const After = (description: string) => Type.Optional(Int64({ minimum: 0, description }))
const Types = Type.Optional(Type.Array(Type.Enum(EVENT_TYPES, { type: 'string' }), {
  maxItems: EVENT_TYPES.length,
  description: 'Returns only events of these types (repeat the parameter for several)'
}))

export const ListEventsQuery = Type.Object({
  after: After('Returns events with a greater id: the id of the last event handled (the stream\'s `Last-Event-ID`). ' +
    'Without it, the feed starts at the oldest event kept. An id past the newest event written is a 400'),
  type: Types,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EVENTS_PER_PAGE, default: DEFAULT_EVENTS_PER_PAGE, description: 'Maximum number of events to return' }))
}, { additionalProperties: false })
export type ListEventsQuery = Static<typeof ListEventsQuery>

export const StreamEventsQuery = Type.Object({
  after: After('Sends the events with a greater id first, then each new one; `Last-Event-ID` takes precedence. ' +
    'Without either, the stream starts with the next event committed. An id past the newest event written is a 400'),
  type: Types
}, { additionalProperties: false })

export const StreamEventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Int64({ minimum: 0, description: 'The id of the last event received, sent by SSE clients when they reconnect' }))
})
