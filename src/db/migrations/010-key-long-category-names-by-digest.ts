import type { Kysely } from 'kysely'
import { categoryNameKey } from '../../categories/category-name-key.js'

// Long category names are keyed by their digest from this build on (see categoryNameKey): the keys
// stored before are made so too, or a long name, sent again, would be taken for a new one. Keys that
// start with the digest's prefix first: one of them could spell the digest of another's key.
// Any key that becomes a digest is longer than 256 characters (1 KiB) or starts with the prefix.
export async function up (db: Kysely<any>): Promise<void> {
  const rows = await db.selectFrom('categories').select(['id', 'name', 'name_key'])
    .where((eb) => eb.or([eb(eb.fn('length', ['name_key']), '>', 256), eb('name_key', 'like', 'sha256:%')]))
    .execute() as Array<{ id: unknown, name: string, name_key: string }>
  rows.sort((a, b) => Number(b.name_key.startsWith('sha256:')) - Number(a.name_key.startsWith('sha256:')))
  for (const { id, name, name_key: stored } of rows) {
    const key = categoryNameKey(name)
    if (key !== stored) await db.updateTable('categories').set({ name_key: key }).where('id', '=', id).execute()
  }
}

export async function down (): Promise<void> {
  // The digests stand (PostgreSQL could not index most of the keys they replace). An earlier build
  // takes a long name sent again for a new one, as it would have on SQLite, and answers 500 for it on
  // PostgreSQL, as it did.
}
