import type { Pet } from '../../pets/pet.schemas.js'
import { inGivenOrder, PET_INSERT_COLUMNS, PET_SELECT_LIST, petJsonSql, petRowValues } from '../pet-columns.js'
import type { PetCreate, PetCreated, PetValues, StoredResponse } from '../pet-store.js'
import { createdResponse, STORED_RESPONSE_SELECT_LIST } from '../stored-response.js'
import type { SqliteConnection } from './sqlite-connection.js'

// Pets are inserted in chunks of these sizes (37 pets: 32, 4, 1), so that a few prepared statements
// serve any group: one INSERT of 32 rows costs SQLite two thirds of 32 single ones. Four bound
// values a row stay well within SQLite's 32,766 a statement.
const CHUNK_SIZES = [512, 256, 128, 64, 32, 16, 8, 4, 2, 1]
const INSERT_PETS = new Map(CHUNK_SIZES.map((rows) => [
  rows,
  `insert into pets ${PET_INSERT_COLUMNS} values ${Array(rows).fill('(?, ?, ?, ?)').join(', ')} returning ${PET_SELECT_LIST}`
]))

// The pets' events, written by SQLite from the rows just inserted (no JSON made in JavaScript). SQLite
// has one writer, so the ids from the first to the last pet of a transaction are all its own.
const RECORD_PETS_CREATED = `insert into events (type, occurred_at, data) select 'pet.created', ?, ${petJsonSql('sqlite')} from pets where id between ? and ? order by id`

const DELETE_EXPIRED_CLAIM = 'delete from idempotency_keys where api_key_id = ? and key = ? and created_at < ?'
const FIND_RESPONSE = `select ${STORED_RESPONSE_SELECT_LIST} from idempotency_keys where api_key_id = ? and key = ?`
const SAVE_RESPONSE = 'insert into idempotency_keys (api_key_id, key, request_hash, status_code, response_body, location, created_at) values (?, ?, ?, ?, ?, ?, ?)'

/**
 * Commits a group of creates in one write transaction, synchronously (the hot write path, without a
 * promise per statement): a create whose idempotency key holds an answer already replays it, the
 * others insert their pets and record their answers. SQLite has one writer at a time, so no other
 * transaction can claim a key between the look and the insert.
 */
export function commitCreates (connection: SqliteConnection, creates: readonly PetCreate[], createdAt: string): PetCreated[] {
  return connection.writeTransaction(() => {
    const outcomes: Array<PetCreated | undefined> = creates.map(({ idempotency: claim }) => {
      if (claim === undefined) return undefined
      connection.query(DELETE_EXPIRED_CLAIM, [claim.apiKeyId, claim.key, claim.notBefore])
      const [stored] = connection.query<StoredResponse>(FIND_RESPONSE, [claim.apiKeyId, claim.key])
      // SQLite hands integers back as BigInt (safe integers are on for int64 columns).
      return stored === undefined ? undefined : { outcome: 'replayed', response: { ...stored, status: Number(stored.status) } }
    })
    const toCreate = creates.filter((_, i) => outcomes[i] === undefined)
    const pets = insertPets(connection, toCreate.map(({ pet }) => pet), createdAt)
    let next = 0
    return outcomes.map((outcome, i) => {
      if (outcome !== undefined) return outcome
      const pet = pets[next++]!
      const claim = creates[i]!.idempotency
      if (claim === undefined) return { outcome: 'created', pet }
      const response = createdResponse(claim, pet)
      connection.query(SAVE_RESPONSE, [claim.apiKeyId, claim.key, claim.requestHash, response.status, response.body, response.location, createdAt])
      return { outcome: 'created', pet, response }
    })
  })
}

/**
 * Inserts pets, and a `pet.created` event for each, inside the caller's write transaction and returns
 * them with their ids, in the order given.
 */
export function insertPets (connection: SqliteConnection, pets: readonly PetValues[], createdAt: string): Pet[] {
  const stored: Pet[] = []
  let start = 0
  for (const size of CHUNK_SIZES) {
    for (; pets.length - start >= size; start += size) {
      const values = pets.slice(start, start + size).flatMap((pet) => petRowValues(pet, createdAt))
      stored.push(...connection.query<Pet>(INSERT_PETS.get(size)!, values))
    }
  }
  if (stored.length > 0) {
    const ids = stored.map((pet) => pet.id)
    connection.query(RECORD_PETS_CREATED, [createdAt, ids.reduce(min), ids.reduce(max)])
  }
  return inGivenOrder(pets, stored)
}

const min = (a: bigint, b: bigint): bigint => a < b ? a : b
const max = (a: bigint, b: bigint): bigint => a > b ? a : b
