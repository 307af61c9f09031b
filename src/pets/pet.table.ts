import type { Generated, Selectable } from 'kysely'
import type { PetStatus } from './pet.schemas.js'

/** The `pets` table: ids come from the store, increase with creation order and are never reused. */
export interface PetTable {
  id: Generated<bigint>
  name: string
  category_id: bigint
  status: PetStatus
  created_at: string
}

export type PetRow = Selectable<PetTable>
