import type { Kysely } from 'kysely'
import type { ApiKeyTable } from '../api-keys/api-key.table.js'
import type { CategoryTable } from '../categories/category.table.js'
import type { EventTable } from '../events/event.table.js'
import type { IdempotencyKeyTable } from '../idempotency/idempotency-key.table.js'
import type { OrderTable } from '../orders/order.table.js'
import type { PetTable } from '../pets/pet.table.js'
import type { WebhookDeliveryTable, WebhookRedeliveryTable, WebhookTable } from '../webhooks/webhook.table.js'
import type { SettingTable } from './settings.table.js'

/** The store's schema, as Kysely sees it. */
export interface Database {
  pets: PetTable
  api_keys: ApiKeyTable
  settings: SettingTable
  idempotency_keys: IdempotencyKeyTable
  orders: OrderTable
  categories: CategoryTable
  events: EventTable
  webhooks: WebhookTable
  webhook_deliveries: WebhookDeliveryTable
  webhook_redeliveries: WebhookRedeliveryTable
}

export type Db = Kysely<Database>
