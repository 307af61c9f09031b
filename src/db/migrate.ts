import { Migrator, type Migration } from 'kysely'
import type { Db } from './database.js'
import * as createPetsAndApiKeys from './migrations/001-create-pets-and-api-keys.js'
import * as addInstallationId from './migrations/002-add-installation-id.js'
import * as createIdempotencyKeys from './migrations/003-create-idempotency-keys.js'
import * as createOrders from './migrations/004-create-orders.js'
import * as addApiKeyScopesAndExpiry from './migrations/005-add-api-key-scopes-and-expiry.js'
import * as createCategories from './migrations/006-create-categories.js'
import * as createEvents from './migrations/007-create-events.js'
import * as createWebhooks from './migrations/008-create-webhooks.js'
import * as notifyPetChanges from './migrations/009-notify-pet-changes.js'

// Listed by hand rather than read from a folder, so the same list works from src/ (tsx) and dist/.
export const MIGRATIONS: Record<string, Migration> = {
  '001-create-pets-and-api-keys': createPetsAndApiKeys,
  '002-add-installation-id': addInstallationId,
  '003-create-idempotency-keys': createIdempotencyKeys,
  '004-create-orders': createOrders,
  '005-add-api-key-scopes-and-expiry': addApiKeyScopesAndExpiry,
  '006-create-categories': createCategories,
  '007-create-events': createEvents,
  '008-create-webhooks': createWebhooks,
  '009-notify-pet-changes': notifyPetChanges
}

/** Brings the store's schema to the latest version; safe to run again and from every entry point. */
export async function migrateToLatest (db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } })
  const { error, results = [] } = await migrator.migrateToLatest()
  if (error) throw new Error(`Migration failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName)
}
