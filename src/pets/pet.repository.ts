import { sql } from 'kysely'
import type { Db } from '../db/database.js'
import { isPostgres } from '../db/dialect.js'
import type { Pet, PetStatus } from './pet.schemas.js'

const PET_COLUMNS = ['id', 'name', 'category_id as categoryId', 'status'] as const

export interface PetFilter {
  status: PetStatus | undefined
  /** Keyset position: only pets with a greater id. */
  afterId: bigint | undefined
  limit: number
}

/** Pets in ascending id order; the (status, id) index keeps this flat as the store grows. */
export async function findPets (db: Db, { status, afterId, limit }: PetFilter): Promise<Pet[]> {
  let query = db.selectFrom('pets').select(PET_COLUMNS).orderBy('id').limit(limit)
  if (status !== undefined) query = query.where('status', '=', status)
  if (afterId !== undefined) query = query.where('id', '>', afterId)
  return await query.execute()
}

export async function findPetById (db: Db, id: bigint): Promise<Pet | undefined> {
  return await db.selectFrom('pets').select(PET_COLUMNS).where('id', '=', id).executeTakeFirst()
}

export interface PetValues {
  name: string
  categoryId: bigint
  status: PetStatus
}

// Any constant shared by every instance; names the lock that orders pet inserts.
const PET_INSERT_LOCK = 7_340_001

/** Stores a pet and returns it with the id the store assigned; outside a transaction, resolves once it is committed. */
export async function insertPet (db: Db, pet: PetValues): Promise<Pet> {
  const insert = (trx: Db) => trx.insertInto('pets')
    .values({ name: pet.name, category_id: pet.categoryId, status: pet.status, created_at: new Date().toISOString() })
    .returning(PET_COLUMNS)
    .executeTakeFirstOrThrow()
  // SQLite has one writer, so ids commit in order. PostgreSQL hands out sequence values to concurrent
  // transactions that may commit out of order, and a keyset reader could then skip a pet: taking a
  // transaction lock before the id is drawn makes ids commit in increasing order, on every instance.
  if (!isPostgres(db)) return await insert(db)
  const lockedInsert = async (trx: Db) => {
    await sql`select pg_advisory_xact_lock(${sql.lit(PET_INSERT_LOCK)})`.execute(trx)
    return await insert(trx)
  }
  return db.isTransaction ? await lockedInsert(db) : await db.transaction().execute(lockedInsert)
}
