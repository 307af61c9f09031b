import { sql, type Kysely } from 'kysely'
import { withIdColumn } from './id-column.js'

export async function up (db: Kysely<any>): Promise<void> {
  await withIdColumn(db, db.schema.createTable('orders'))
    .addColumn('pet_id', 'bigint', (col) => col.notNull().references('pets.id'))
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .execute()
  // listOrders filters by status and pages by id.
  await db.schema.createIndex('orders_status_id').on('orders').columns(['status', 'id']).execute()
  // The last line of defence for "one live order per pet", whatever the code above it does.
  await sql`create unique index orders_one_live_per_pet on orders (pet_id) where status in ('placed', 'approved')`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('orders').execute()
}
