import type { Kysely } from 'kysely'
import { withIdColumn } from './id-column.js'

// The event log. No index besides the id: every write adds a row, and readers walk ids in order.
export async function up (db: Kysely<any>): Promise<void> {
  await withIdColumn(db, db.schema.createTable('events'))
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('occurred_at', 'text', (col) => col.notNull())
    .addColumn('data', 'text', (col) => col.notNull())
    .execute()
  // The id of the last event deleted for its age: reading after an older id would miss events.
  await db.insertInto('settings').values({ name: 'events_pruned_through', value: '0' }).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.deleteFrom('settings').where('name', '=', 'events_pruned_through').execute()
  await db.schema.dropTable('events').execute()
}
