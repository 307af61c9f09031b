import type { Kysely } from 'kysely'

// Every key made before scopes existed keeps every scope (`*`), so that no running client breaks.
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('scopes', 'text', (column) => column.notNull().defaultTo('*')).execute()
  await db.schema.alterTable('api_keys').addColumn('expires_at', 'text').execute()
  await db.schema.alterTable('api_keys').addColumn('rotated_from', 'bigint').execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  for (const column of ['rotated_from', 'expires_at', 'scopes']) await db.schema.alterTable('api_keys').dropColumn(column).execute()
}
