import type { Kysely } from 'kysely'
import { withIdColumn } from './id-column.js'

export async function up (db: Kysely<any>): Promise<void> {
  await withIdColumn(db, db.schema.createTable('webhooks'))
    .addColumn('url', 'text', (col) => col.notNull())
    .addColumn('event_types', 'text', (col) => col.notNull())
    .addColumn('description', 'text')
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('last_error', 'text')
    .addColumn('secret', 'text', (col) => col.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until', 'text')
    .addColumn('delivered_through', 'bigint', (col) => col.notNull())
    .addColumn('attempt', 'integer', (col) => col.notNull())
    .addColumn('next_attempt_at', 'text', (col) => col.notNull())
    .addColumn('lease_until', 'text', (col) => col.notNull())
    .addColumn('lease_token', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .execute()
  await withIdColumn(db, db.schema.createTable('webhook_deliveries'))
    .addColumn('webhook_id', 'bigint', (col) => col.notNull())
    .addColumn('event_id', 'bigint', (col) => col.notNull())
    .addColumn('attempt', 'integer', (col) => col.notNull())
    .addColumn('attempted_at', 'text', (col) => col.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (col) => col.notNull())
    .execute()
  // The deliveries log is read per subscription, newest first.
  await db.schema.createIndex('webhook_deliveries_webhook_id_id').on('webhook_deliveries').columns(['webhook_id', 'id']).execute()
  await withIdColumn(db, db.schema.createTable('webhook_redeliveries'))
    .addColumn('webhook_id', 'bigint', (col) => col.notNull())
    .addColumn('event_id', 'bigint', (col) => col.notNull())
    .addColumn('lease_until', 'text', (col) => col.notNull())
    .execute()
  // An event asked for again while its retry is queued is queued once.
  await db.schema.createIndex('webhook_redeliveries_webhook_id_event_id').on('webhook_redeliveries').columns(['webhook_id', 'event_id']).unique().execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_redeliveries').execute()
  await db.schema.dropTable('webhook_deliveries').execute()
  await db.schema.dropTable('webhooks').execute()
}
