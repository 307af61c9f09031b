import type { Pet } from '../../pets/pet.schemas.js'
import { PET_INSERT_COLUMNS, petJsonSql, petOfValues, petRowValues } from '../pet-columns.js'
import type { PetCreate, PetCreated, PetValues, StoredResponse } from '../pet-store.js'
import { createdResponse, STORED_RESPONSE_SELECT_LIST } from '../stored-response.js'
import type { SqliteConnection } from './sqlite-connection.js'

// Pets are inserted in chunks of these sizes (37 pets: 32, 4, 1), so that a few prepared statements
// serve any group: one INSERT of 32 rows costs SQLite two thirds of 32 single ones. Four bound
// values a row stay well within SQLite's 32,766 a statement.
const CHUNK_SIZES = [512, 256, 128, 64, 32, 16, 8, 4, 2, 1]
const INSERT_PETS = new Map(CHUNK_SIZES.map((rows) => [
  rows,
  `insert into pets ${PET_INSERT_COLUMNS} values ${Array(rows).fill('(?, ?, ?, ?)').join(', ')}`
]))

// No RETURNING: the rows' ids are known without reading them back, which cost about a fifth of the
// insert (measured). Under SQLite's one writer, AUTOINCREMENT numbers the rows of a transaction's
// inserts one after the other, from the highest id ever used: a chunk's ids end at its last rowid.
// The pets' events are written by SQLite from those rows (no JSON made in JavaScript); their count
// checks that the ids from the first to the last pet are the transaction's own, all of them.
const RECORD_PETS_CREATED = `insert into events (type, occurred_at, data) select 'pet.created', ?, ${petJsonSql('sqlite')} from pets where id between ? and ? order by id`

// An answer is found only while it is kept (created at or after the claim's `notBefore`); an expired
// one still in the table, not yet purged, is replaced by the new answer.
const FIND_RESPONSE = `select ${STORED_RESPONSE_SELECT_LIST} from idempotency_keys where api_key_id = ? and key = ? and created_at >= ?`
const SAVE_RESPONSE = 'insert or replace into idempotency_keys (api_key_id, key, request_hash, status_code, response_body, location, created_at) values (?, ?, ?, ?, ?, ?, ?)'

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
      const [stored] = connection.query<StoredResponse>(FIND_RESPONSE, [claim.apiKeyId, claim.key, claim.notBefore])
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
      connection.run(SAVE_RESPONSE, [claim.apiKeyId, claim.key, claim.requestHash, response.status, response.body, response.location, createdAt])
      return { outcome: 'created', pet, response }
    })
  })
}

/**
 * Inserts pets, and a `pet.created` event for each, inside the caller's write transaction and returns
 * them with their ids, in the order given. Throws, rolling the transaction back, should the ids not
 * be consecutive (something else inserting pets meanwhile, such as a trigger): no pet is answered
 * with another's id.
 */
export function insertPets (connection: SqliteConnection, pets: readonly PetValues[], createdAt: string): Pet[] {
  if (pets.length === 0) return []
  const stored: Pet[] = []
  let start = 0
  for (const size of CHUNK_SIZES) {
    for (; pets.length - start >= size; start += size) {
      const chunk = pets.slice(start, start + size)
      const { lastInsertRowid: lastId } = connection.run(INSERT_PETS.get(size)!, chunk.flatMap((pet) => petRowValues(pet, createdAt)))
      chunk.forEach((pet, i) => { stored.push(petOfValues(lastId - BigInt(size - 1 - i), pet)) })
    }
  }
  const firstId = stored[0]!.id
  const lastId = stored.at(-1)!.id
  const { changes: recorded } = connection.run(RECORD_PETS_CREATED, [createdAt, firstId, lastId])
  if (recorded !== pets.length || lastId - firstId + 1n !== BigInt(pets.length)) throw new Error('the pets just inserted did not take consecutive ids')
  return stored
}
