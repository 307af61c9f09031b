import type { Db } from '../db/database.js'
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

/** Stores a pet and returns it with the id the store assigned; resolves only once it is committed. */
export async function insertPet (db: Db, pet: PetValues): Promise<Pet> {
  return await db.insertInto('pets')
    .values({ name: pet.name, category_id: pet.categoryId, status: pet.status, created_at: new Date().toISOString() })
    .returning(PET_COLUMNS)
    .executeTakeFirstOrThrow()
}
