import { isoNow, type Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { countApiKeys, insertApiKey } from './api-key.repository.js'
import { generateApiKey } from './api-key.service.js'

/**
 * Makes the first key of a store that has never had one, so a fresh install can be called at once;
 * returns its text, or undefined when the store already has (or had) keys. Of several instances
 * starting together on an empty store, only the one that claims the `first_key_created` row makes it.
 */
export async function createFirstApiKey (db: Db, { expiresAt, clock }: { expiresAt?: Date, clock: Clock }): Promise<string | undefined> {
  if (await countApiKeys(db) > 0) return undefined
  return await db.transaction().execute(async (trx) => {
    const claim = await trx.insertInto('settings')
      .values({ name: 'first_key_created', value: isoNow(clock) })
      .onConflict((conflict) => conflict.column('name').doNothing())
      .executeTakeFirst()
    if (claim.numInsertedOrUpdatedRows !== 1n) return undefined
    const { key, hash, hint } = generateApiKey()
    await insertApiKey(trx, { name: 'first key', hash, hint, expiresAt }, clock)
    return key
  })
}
