import { Pet } from '../pets/pet.schemas.js'
import type { PetRow, PetTable } from '../pets/pet.table.js'
import type { PetValues } from './pet-store.js'

/**
 * The column behind each field of the Pet schema, the one list every query that reads pets is built
 * from: the compiler requires a column for each field the schema declares, and the lists below follow
 * the schema's own order, which is the order of the fields in every answer.
 */
const COLUMN_OF_FIELD: { readonly [Field in keyof Pet]-?: keyof PetTable } = {
  id: 'id',
  name: 'name',
  categoryId: 'category_id',
  status: 'status'
}

const PET_FIELDS = Object.keys(Pet.properties).map((field) => ({ field, column: COLUMN_OF_FIELD[field as keyof Pet] }))

/** A pet as the API answers it, from its row (for the writes that read it back through Kysely). */
export function petOfRow (row: PetRow): Pet {
  return Object.fromEntries(PET_FIELDS.map(({ field, column }) => [field, row[column]])) as Pet
}

/** A pet as the API answers it, from the values it was inserted with and the id it took. */
export function petOfValues (id: bigint, values: PetValues): Pet {
  // A plain loop: no intermediate objects (a spread, entries) for every created pet.
  const pet: Record<string, unknown> = {}
  for (const { field } of PET_FIELDS) pet[field] = field === 'id' ? id : values[field as keyof PetValues]
  return pet as Pet
}

/** The pets' columns that answers are made of, under their own names. */
export const PET_COLUMN_LIST = PET_FIELDS.map(({ column }) => column).join(', ')

/**
 * A SQL expression for a pet's JSON text, built from its columns: `json_object` on SQLite; on
 * PostgreSQL, the fields' `to_json` joined as text, because its `json_build_object` spaces its output
 * (`{"id" : 1}`) and `jsonb` reorders the fields.
 */
export function petJsonSql (dialect: 'sqlite' | 'postgres'): string {
  if (dialect === 'sqlite') return `json_object(${PET_FIELDS.map(({ field, column }) => `'${field}', ${column}`).join(', ')})`
  return `'{' || ${PET_FIELDS.map(({ field, column }, i) => `'${i === 0 ? '' : ','}"${field}":' || to_json(${column})::text`).join(' || ')} || '}'`
}

/** The pets' columns a create writes, in the order of `petRowValues`. */
export const PET_INSERT_COLUMNS = 'name, category_id, status, created_at'

/** The values of one row of `PET_INSERT_COLUMNS`. */
export function petRowValues (pet: { name: string, categoryId: bigint, status: string }, createdAt: string): unknown[] {
  return [pet.name, pet.categoryId, pet.status, createdAt]
}
