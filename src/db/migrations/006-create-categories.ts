import type { Kysely } from 'kysely'
import { withIdColumn } from './id-column.js'

export async function up (db: Kysely<any>): Promise<void> {
  await withIdColumn(db, db.schema.createTable('categories'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('name_key', 'text', (col) => col.notNull().unique())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .execute()
  // listPets filtered by category pages by id. One index only: it costs every create (about 1 µs a
  // pet on SQLite); with both filters the planner walks this one or (status, id), whichever is narrower.
  await db.schema.createIndex('pets_category_id_id').on('pets').columns(['category_id', 'id']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('pets_category_id_id').execute()
  await db.schema.dropTable('categories').execute()
}
