import { randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'
import { withIdColumn } from './id-column.js'

export async function up (db: Kysely<any>): Promise<void> {
  await withIdColumn(db, db.schema.createTable('pets'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('category_id', 'bigint', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .execute()
  // listPets filters by status and pages by id: this index serves both without a sort.
  await db.schema.createIndex('pets_status_id').on('pets').columns(['status', 'id']).execute()

  await withIdColumn(db, db.schema.createTable('api_keys'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('key_hash', 'text', (col) => col.notNull().unique())
    .addColumn('key_hint', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute()

  await db.schema.createTable('settings')
    .addColumn('name', 'text', (col) => col.primaryKey())
    .addColumn('value', 'text', (col) => col.notNull())
    .execute()
  // Signs pagination cursors; shared by every instance on this store.
  await db.insertInto('settings')
    .values({ name: 'cursor_secret', value: randomBytes(32).toString('base64url') })
    .execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('settings').execute()
  await db.schema.dropTable('api_keys').execute()
  await db.schema.dropTable('pets').execute()
}
