import { randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'

// Names this store in shared services (Redis rate-limit counters), so that deployments, or test
// runs, sharing one Redis never count into each other's buckets.
export async function up (db: Kysely<any>): Promise<void> {
  await db.insertInto('settings')
    .values({ name: 'installation_id', value: randomBytes(9).toString('base64url') })
    .execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.deleteFrom('settings').where('name', '=', 'installation_id').execute()
}
