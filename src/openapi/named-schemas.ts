import { Category, NewCategory } from '../categories/category.schemas.js'
import { ErrorBody } from '../errors.js'
import { Event } from '../events/event.schemas.js'
import { NewOrder, Order, OrderStatus } from '../orders/order.schemas.js'
import { NewPet, Pet, PetStatus } from '../pets/pet.schemas.js'
import { CreatedWebhook, NewWebhook, RetryQueued, RotatedSecret, Webhook, WebhookChanges, WebhookDelivery } from '../webhooks/webhook.schemas.js'

/**
 * The schemas the interface names, each marked with its name as `title`: each is a component of the
 * OpenAPI document, and every copy of it in an operation (routes keep their schemas inline, which is
 * what Fastify validates and serializes with) is replaced by a `$ref` to it.
 */
const NAMED_SCHEMAS = {
  Pet,
  NewPet,
  PetStatus,
  Category,
  NewCategory,
  Event,
  Order,
  NewOrder,
  OrderStatus,
  Webhook,
  NewWebhook,
  CreatedWebhook,
  WebhookChanges,
  RotatedSecret,
  WebhookDelivery,
  RetryQueued,
  Error: ErrorBody
}

// A copy may say more than the component: these stay beside its `$ref` (OpenAPI 3.1 allows it).
const OWN_KEYWORDS = ['description', 'default'] as const

type Json = Record<string, unknown>

/** The components.schemas of the document: plain JSON, with the named schemas inside them referenced too. */
export function namedSchemaComponents (): Record<string, Json> {
  return Object.fromEntries(Object.entries(NAMED_SCHEMAS).map(([name, schema]) => {
    const component = JSON.parse(JSON.stringify(schema)) as Json
    return [name, Object.fromEntries(Object.entries(component).map(([key, value]) => [key, referenceNamed(value)]))]
  }))
}

/** `value` with every copy of a named schema replaced by a `$ref` to its component. */
export function referenceNamed<T> (value: T): T {
  if (Array.isArray(value)) return value.map(referenceNamed) as T
  if (typeof value !== 'object' || value === null) return value
  const node = value as Json
  const name = node.title
  if (typeof name === 'string' && name in NAMED_SCHEMAS) {
    const component = NAMED_SCHEMAS[name as keyof typeof NAMED_SCHEMAS] as unknown as Json
    const own = OWN_KEYWORDS.filter((key) => node[key] !== undefined && node[key] !== component[key])
    return { $ref: `#/components/schemas/${name}`, ...Object.fromEntries(own.map((key) => [key, node[key]])) } as T
  }
  return Object.fromEntries(Object.entries(node).map(([key, child]) => [key, referenceNamed(child)])) as T
}
