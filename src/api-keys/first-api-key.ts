import type { Db } from '../db/database.js'
import { countApiKeys, insertApiKey } from './api-key.repository.js'
import { generateApiKey } from './api-key.service.js'

/**
 * Makes the first key of a store that has never had one, so a fresh install can be called at once;
 * returns its text, or undefined when the store already has (or had) keys.
 */
export async function createFirstApiKey (db: Db): Promise<string | undefined> {
  if (await countApiKeys(db) > 0) return undefined
  const { key, hash, hint } = generateApiKey()
  await insertApiKey(db, { name: 'first key', hash, hint })
  return key
}
