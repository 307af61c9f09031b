import type { Pet } from '../../pets/pet.schemas.js'
import { PET_INSERT_COLUMNS, petJsonSql, petOfValues, petRowValues } from '../pet-columns.js'
import type { PetCreate, PetCreated, PetValues, StoredResponse } from '../pet-store.js'
import { isStoreUnavailable } from '../store-errors.js'
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

// No RETURNING: reading the rows back was a measurable part of an insert's cost (docs/benchmarks.md),
// and the ids can be worked out. AUTOINCREMENT gives every new row an id above the highest ever used,
// which `sqlite_sequence` keeps, one after the other under SQLite's one writer: n pets inserted after
// it was `seq` are seq+1 to seq+n, which the last row's id confirms (any other row inserted meanwhile,
// by a trigger say, pushes it further). Their events are written by SQLite from those rows (no JSON
// made in JavaScript).
const PETS_SEQUENCE = "select seq from sqlite_sequence where name = 'pets'"
const RECORD_PETS_CREATED = `insert into events (type, occurred_at, data) select 'pet.created', ?, ${petJsonSql('sqlite')} from pets where id between ? and ? order by id`

// One look a claim: the answer with its age, deleted only when older than the retention (the rare case).
const FIND_CLAIM = `select ${STORED_RESPONSE_SELECT_LIST}, created_at as "createdAt" from idempotency_keys where api_key_id = ? and key = ?`
const DELETE_CLAIM = 'delete from idempotency_keys where api_key_id = ? and key = ?'
const SAVE_RESPONSE = 'insert into idempotency_keys (api_key_id, key, request_hash, status_code, response_body, location, created_at) values (?, ?, ?, ?, ?, ?, ?)'

/**
 * Commits a group of creates in one write transaction, synchronously (the hot write path, without a
 * promise per statement).
 */
export function commitCreates (connection: SqliteConnection, creates: readonly PetCreate[], createdAt: string): PetCreated[] {
  return connection.writeTransaction(() => writeCreates(connection, creates, createdAt))
}

/** Creates committed together, at one time (`createdAt`). */
export interface CreateGroup {
  creates: readonly PetCreate[]
  createdAt: string
}

/**
 * Commits groups of creates in one write transaction, so that they share one commit and its fsync,
 * and returns, per group, its outcomes or its error. After a fault none is committed: a store fault
 * (busy, full, failing) fails them all at once, as alone each would wait for it again; any other is
 * one group's, so each is then tried alone, to fail alone.
 */
export function commitCreateGroups (connection: SqliteConnection, groups: readonly CreateGroup[]): Array<PetCreated[] | Error> {
  if (groups.length > 1) {
    try {
      return connection.writeTransaction(() => groups.map(({ creates, createdAt }) => writeCreates(connection, creates, createdAt)))
    } catch (error) {
      if (isStoreUnavailable(error)) return groups.map(() => asError(error))
    }
  }
  const outcomes: Array<PetCreated[] | Error> = []
  let storeFault: Error | undefined
  for (const { creates, createdAt } of groups) {
    const outcome = storeFault ?? outcomeOf(() => commitCreates(connection, creates, createdAt))
    if (outcome instanceof Error && isStoreUnavailable(outcome)) storeFault = outcome
    outcomes.push(outcome)
  }
  return outcomes
}

function outcomeOf (commit: () => PetCreated[]): PetCreated[] | Error {
  try {
    return commit()
  } catch (error) {
    return asError(error)
  }
}

function asError (error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}

/**
 * Writes a group of creates inside the caller's write transaction: a create whose idempotency key
 * holds an answer already replays it, the others insert their pets and record their answers. SQLite
 * has one writer at a time, so no other transaction can claim a key between the look and the insert.
 */
function writeCreates (connection: SqliteConnection, creates: readonly PetCreate[], createdAt: string): PetCreated[] {
  const outcomes: Array<PetCreated | undefined> = creates.map(({ idempotency: claim }) => {
    if (claim === undefined) return undefined
    const [stored] = connection.query<StoredResponse & { createdAt: string }>(FIND_CLAIM, [claim.apiKeyId, claim.key])
    if (stored === undefined) return undefined
    // ISO 8601 times in UTC compare as text, in JavaScript as in SQL.
    if (stored.createdAt < claim.notBefore) {
      connection.run(DELETE_CLAIM, [claim.apiKeyId, claim.key])
      return undefined
    }
    const { requestHash, status, body, location } = stored
    // SQLite hands integers back as BigInt (safe integers are on for int64 columns).
    return { outcome: 'replayed', response: { requestHash, status: Number(status), body, location } }
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
}

/**
 * Inserts pets, and a `pet.created` event for each, inside the caller's write transaction and returns
 * them with their ids, in the order given. Throws, rolling the transaction back, should any other
 * row have been inserted among them: no pet is answered with another's id.
 */
export function insertPets (connection: SqliteConnection, pets: readonly PetValues[], createdAt: string): Pet[] {
  if (pets.length === 0) return []
  const [sequence] = connection.query<{ seq: bigint }>(PETS_SEQUENCE)
  const firstId = (sequence?.seq ?? 0n) + 1n
  const lastId = firstId + BigInt(pets.length - 1)
  let lastInserted = 0n
  let start = 0
  for (const size of CHUNK_SIZES) {
    for (; pets.length - start >= size; start += size) {
      lastInserted = connection.run(INSERT_PETS.get(size)!, pets.slice(start, start + size).flatMap((pet) => petRowValues(pet, createdAt))).lastInsertRowid
    }
  }
  const { changes: recorded } = connection.run(RECORD_PETS_CREATED, [createdAt, firstId, lastId])
  if (lastInserted !== lastId || recorded !== pets.length) throw new Error('other rows were inserted among the pets just inserted')
  return pets.map((pet, i) => petOfValues(firstId + BigInt(i), pet))
}
