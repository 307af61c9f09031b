import type { Kysely } from 'kysely'
import { categoryNameKey, DIGEST_PREFIX, LONGEST_KEY_BYTES } from '../../categories/category-name-key.js'

// Long category names are keyed by their digest from this build on (see categoryNameKey): the keys
// stored before are made so too, or a long name, sent again, would be taken for a new one. The key is
// computed by the service, not the database, so this migration uses the service's own function.
// A key that becomes a digest has more than LONGEST_KEY_BYTES / 4 characters, or starts with the
// prefix: the rows to look at (few: names padded with kilobytes of whitespace, or spelling a digest).
//
// During a rolling upgrade, an instance of an earlier build still serving keys a long name as it is
// folded: that name, created there, may be created again here (docs/operations.md, "Upgrades").
export async function up (db: Kysely<any>): Promise<void> {
  const rows = await db.selectFrom('categories').select(['id', 'name', 'name_key'])
    .where((eb) => eb.or([eb(eb.fn('length', ['name_key']), '>', LONGEST_KEY_BYTES / 4), eb('name_key', 'like', `${DIGEST_PREFIX}%`)]))
    .execute() as Array<{ id: unknown, name: string, name_key: string }>
  let pending = rows.map((row) => ({ ...row, key: categoryNameKey(row.name) })).filter(({ key, name_key: stored }) => key !== stored)
  // A row's new key may be another's stored key (a name that spells the digest of another's): that
  // other row first, or the unique index refuses the update. Digests make no cycle.
  while (pending.length > 0) {
    const taken = new Set(pending.map(({ name_key: stored }) => stored))
    const ready = pending.filter(({ key }) => !taken.has(key))
    if (ready.length === 0) throw new Error('category keys that wait on one another: none can be re-keyed first')
    for (const { id, key } of ready) await db.updateTable('categories').set({ name_key: key }).where('id', '=', id).execute()
    pending = pending.filter((row) => !ready.includes(row))
  }
}

export async function down (): Promise<void> {
  // The digests stand (PostgreSQL could not index most of the keys they replace). An earlier build
  // takes a long name sent again for a new one, as it would have on SQLite, and answers 500 for it on
  // PostgreSQL, as it did.
}
