import type { Db } from './database.js'

/** A value the migrations made, such as `cursor_secret`; throws when it is missing. */
export async function findSetting (db: Db, name: string): Promise<string> {
  const row = await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst()
  if (row === undefined) throw new Error(`setting ${name} is missing: has the store been migrated?`)
  return row.value
}
