import { Migrator, sql, type Migration } from 'kysely'
import { ConfigError } from '../config.js'
import { messageOf } from '../error-message.js'
import { isRefusedPostgresSetting, isStoreUnavailable } from '../store/store-errors.js'
import type { Db } from './database.js'
import { isPostgres } from './dialect.js'
import * as createPetsAndApiKeys from './migrations/001-create-pets-and-api-keys.js'
import * as addInstallationId from './migrations/002-add-installation-id.js'
import * as createIdempotencyKeys from './migrations/003-create-idempotency-keys.js'
import * as createOrders from './migrations/004-create-orders.js'
import * as addApiKeyScopesAndExpiry from './migrations/005-add-api-key-scopes-and-expiry.js'
import * as createCategories from './migrations/006-create-categories.js'
import * as createEvents from './migrations/007-create-events.js'
import * as createWebhooks from './migrations/008-create-webhooks.js'
import * as notifyPetChanges from './migrations/009-notify-pet-changes.js'
import * as keyLongCategoryNamesByDigest from './migrations/010-key-long-category-names-by-digest.js'

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
  '009-notify-pet-changes': notifyPetChanges,
  '010-key-long-category-names-by-digest': keyLongCategoryNamesByDigest
}

/** What migrateToLatest did. */
export interface MigrationOutcome {
  /** The migrations applied now, in order. */
  applied: string[]
  /** Migrations the store records that come after all of this build's: a newer build applied them. */
  newer: string[]
}

/**
 * Brings the store's schema to the latest version; safe to run again and from every entry point.
 *
 * A store a newer build has migrated further is served as it is (nothing is applied, and `newer`
 * names what this build does not know), as Flyway ignores future migrations: during a rolling upgrade
 * an instance of the previous build that restarts must start, as the ones still running go on
 * serving. Migrations are additive for that reason (docs/operations.md, "Upgrades"). A store whose
 * record does not extend this build's own (another branch's, say) is refused, naming what it records.
 */
export async function migrateToLatest (db: Db): Promise<MigrationOutcome> {
  if (isPostgres(db)) await refuseOtherEncodings(db)
  // Names in code-point order, as Kysely orders the migrations themselves: its default for names
  // recorded at the same moment, localeCompare, loaded ICU's collation data: 16 ms of `keys list`.
  const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS }, nameComparator: (a, b) => a < b ? -1 : a > b ? 1 : 0 })
  const { error, results = [] } = await migrator.migrateToLatest()
  if (error === undefined) return { applied: results.filter((result) => result.status === 'Success').map((result) => result.migrationName), newer: [] }
  const message = messageOf(error)
  // Kysely's refusal of a store that records a migration this build does not have.
  if (message.startsWith('corrupted migrations')) {
    const recorded = await recordedMigrations(db)
    const unknown = recorded.filter((name) => !(name in MIGRATIONS)).sort()
    const last = Object.keys(MIGRATIONS).sort().at(-1)!
    const missing = Object.keys(MIGRATIONS).filter((name) => !recorded.includes(name))
    if (unknown.length > 0 && missing.length === 0 && unknown.every((name) => name > last)) return { applied: [], newer: unknown }
    if (unknown.length > 0) {
      const why = missing.length > 0 ? `, and lacks some of its own (${missing.join(', ')})` : `, and not after all of its own (up to ${last})`
      throw new Error(`The store records migrations this build does not have (${unknown.join(', ')})${why}: another build made it; ` +
        'run that build, or a copy of the store from before it', { cause: error })
    }
    // Kysely's words name the migration found in the missing one's place, as if it were the fault.
    if (missing.length > 0) {
      throw new Error(`The store lacks migrations of this build (${missing.join(', ')}) before others it records: it was changed by hand, ` +
        'or restored in part; restore a copy of it made by this build or an earlier one', { cause: error })
    }
  }
  // A privilege the role lacks (CREATE on the schema) is a setting to change, as at connect time.
  if (isRefusedPostgresSetting(error)) throw new ConfigError(`Migration failed: ${message}`, { cause: error })
  // Every command brings the store up to date first, often with nothing to apply: a store that cannot
  // be used then is an outage, not a migration gone wrong. Both dialects apply them in one transaction.
  if (isStoreUnavailable(error)) throw new Error(`The store could not be brought up to date, as every command does first (${message}): nothing was changed`, { cause: error })
  throw new Error(`Migration failed: ${message}`, { cause: error })
}

/**
 * Refuses a PostgreSQL database whose encoding cannot hold UTF-8 (LATIN1, say), before anything is
 * migrated: names in any language could not be stored, and the first key's hint, with its `…`,
 * failed the start after every migration had been applied. SQL_ASCII (what initdb makes under the C
 * locale) keeps the bytes it is sent, the service's UTF-8, as it has served since the start.
 */
async function refuseOtherEncodings (db: Db): Promise<void> {
  // The first statement: the driver's words alone (connect ECONNREFUSED, role "app" does not exist) named neither the store nor the setting.
  // A server that refuses the setting (its user, password or database) stops the start as an invalid value does (exit 2).
  const { rows } = await sql<{ encoding: string }>`select current_setting('server_encoding') as encoding`.execute(db).catch((error: unknown) => {
    throw new (isRefusedPostgresSetting(error) ? ConfigError : Error)(`Cannot use the PostgreSQL store that DATABASE_URL names: ${messageOf(error)}`, { cause: error })
  })
  const encoding = rows[0]!.encoding
  if (encoding === 'UTF8' || encoding === 'SQL_ASCII') return
  throw new ConfigError(`The PostgreSQL database is encoded in ${encoding}, and the service stores text as UTF-8: ` +
    'point DATABASE_URL at a database created with UTF-8 (createdb -E UTF8 -T template0 NAME)')
}

/** What to tell an operator of a store a newer build has migrated. */
export function newerMigrationsMessage (newer: string[]): string {
  return `a newer build has migrated the store (${newer.join(', ')}): this one serves it without what they add, as during an upgrade; finish the upgrade`
}

/** The names of the migrations the store records as applied (Kysely's table). */
async function recordedMigrations (db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db)
  return rows.map(({ name }) => name)
}
