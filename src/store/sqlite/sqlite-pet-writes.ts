import type { Pet } from '../../pets/pet.schemas.js'
import { PET_INSERT_COLUMNS, petJsonSql, petOfValues, petRowValues } from '../pet-columns.js'
import type { IdempotencyClaim, PetCreate, PetCreated, PetValues, StoredResponse } from '../pet-store.js'
import { isStoreUnavailable } from '../store-errors.js'
import { createdResponse, STORED_RESPONSE_SELECT_LIST } from '../stored-response.js'
import type { SqliteConnection } from './sqlite-connection.js'

// Pets are inserted in chunks of these sizes (37 pets: 32, 4, 1), so that a few prepared statements
// serve any group: one INSERT of 32 rows costs SQLite two thirds of 32 single ones. Four bound
// values a row stay well within SQLite's 32,766 a statement.
const CHUNK_SIZES = [512, 256, 128, 64, 32, 16, 8, 4, 2, 1]
const INSERT_PETS = new Map(CHUNK_SIZES.map((rows) => [
  rows,
  `insert into pets (${PET_INSERT_COLUMNS}) values ${Array(rows).fill('(?, ?, ?, ?)').join(', ')}`
]))

// No RETURNING: reading the rows back was a measurable part of an insert's cost (docs/benchmarks.md),
// and the ids can be worked out. AUTOINCREMENT gives every new row an id above the highest ever used,
// which `sqlite_sequence` keeps, one after the other under SQLite's one writer: n pets inserted after
// it was `seq` are seq+1 to seq+n, which the last row's id confirms (any other row inserted meanwhile,
// by a trigger say, pushes it further). Their events are written by SQLite from those rows (no JSON
// made in JavaScript).
const PETS_SEQUENCE = "select seq from sqlite_sequence where name = 'pets'"
const RECORD_PETS_CREATED = `insert into events (type, occurred_at, data) select 'pet.created', ?, ${petJsonSql('sqlite')} from pets where id between ? and ? order by id`

// A claim is one statement, in the common case of a new key: it stores its answer, made for the id its
// pet will take (see PETS_SEQUENCE), before the pet is inserted. A key holding an answer younger than
// the retention keeps it (no change), and that answer is read and replayed; an older one is replaced
// (ISO 8601 times in UTC compare as text). A look first and an insert after cost an idempotent create
// 3% more CPU (docs/benchmarks.md).
const CLAIM = `insert into idempotency_keys (api_key_id, key, request_hash, status_code, response_body, location, created_at)
  values (?, ?, ?, ?, ?, ?, ?)
  on conflict (api_key_id, key) do update set request_hash = excluded.request_hash, status_code = excluded.status_code,
    response_body = excluded.response_body, location = excluded.location, created_at = excluded.created_at
  where idempotency_keys.created_at < ?`
const FIND_CLAIMED = `select ${STORED_RESPONSE_SELECT_LIST} from idempotency_keys where api_key_id = ? and key = ?`

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
 * holds an answer already replays it, the others record their answers and insert their pets. SQLite
 * has one writer at a time, so no other transaction can claim a key meanwhile.
 */
function writeCreates (connection: SqliteConnection, creates: readonly PetCreate[], createdAt: string): PetCreated[] {
  const firstId = nextPetId(connection)
  const outcomes = outcomesOf(creates, firstId, (_index, claim, response) =>
    claimKey(connection, claim, response, createdAt) ? undefined : claimedResponse(connection, claim))
  const created: Pet[] = []
  for (const outcome of outcomes) if (outcome.outcome === 'created') created.push(outcome.pet)
  insertPetsAt(connection, firstId, created, createdAt)
  return outcomes
}

/**
 * A group's outcomes, in order: the pets take ids from `firstId` on, one after the other, but for the
 * creates whose claim `replayOf` finds answered before (it is given the answer the claim would keep,
 * and returns the one to replay). Its outcomes follow from these alone, so the writer thread sends
 * back no more than the first id and the replays (see writer-wire).
 */
export function outcomesOf (
  creates: readonly PetCreate[],
  firstId: bigint,
  replayOf: (index: number, claim: IdempotencyClaim, response: StoredResponse) => StoredResponse | undefined
): PetCreated[] {
  let nextId = firstId
  return creates.map(({ pet: values, idempotency: claim }, index): PetCreated => {
    const created: Extract<PetCreated, { outcome: 'created' }> = { outcome: 'created', pet: petOfValues(nextId, values) }
    if (claim !== undefined) {
      created.response = createdResponse(claim, created.pet)
      const replayed = replayOf(index, claim, created.response)
      if (replayed !== undefined) return { outcome: 'replayed', response: replayed }
    }
    nextId++
    return created
  })
}

/** Stores the answer under the claim's key, unless the key holds one younger than the retention: false then. */
function claimKey (connection: SqliteConnection, claim: IdempotencyClaim, response: StoredResponse, createdAt: string): boolean {
  const { changes } = connection.run(CLAIM, [claim.apiKeyId, claim.key, claim.requestHash, response.status, response.body, response.location, createdAt, claim.notBefore])
  return changes === 1
}

/** The answer a claim's key holds (a retry's). */
function claimedResponse (connection: SqliteConnection, claim: IdempotencyClaim): StoredResponse {
  const [stored] = connection.query<StoredResponse>(FIND_CLAIMED, [claim.apiKeyId, claim.key])
  // SQLite hands integers back as BigInt (safe integers are on for int64 columns).
  return { ...stored!, status: Number(stored!.status) }
}

/** The id the next pet inserted takes: AUTOINCREMENT gives each one above the highest ever used. */
function nextPetId (connection: SqliteConnection): bigint {
  const [sequence] = connection.query<{ seq: bigint }>(PETS_SEQUENCE)
  return (sequence?.seq ?? 0n) + 1n
}

/**
 * Inserts pets, and a `pet.created` event for each, inside the caller's write transaction and returns
 * them with their ids, in the order given. Throws, rolling the transaction back, should any other row
 * have been inserted among them (see insertPetsAt).
 */
export function insertPets (connection: SqliteConnection, pets: readonly PetValues[], createdAt: string): Pet[] {
  const firstId = nextPetId(connection)
  insertPetsAt(connection, firstId, pets, createdAt)
  return pets.map((pet, i) => petOfValues(firstId + BigInt(i), pet))
}

/**
 * Inserts pets, and a `pet.created` event for each, inside the caller's write transaction, as ids
 * `firstId` and on, in the order given. Throws, rolling the transaction back, should any other row
 * have been inserted before or among them: no pet is answered with another's id.
 */
function insertPetsAt (connection: SqliteConnection, firstId: bigint, pets: readonly PetValues[], createdAt: string): void {
  if (pets.length === 0) return
  const lastId = firstId + BigInt(pets.length - 1)
  let lastInserted = 0n
  let start = 0
  for (const size of CHUNK_SIZES) {
    for (; pets.length - start >= size; start += size) {
      // A plain loop: flatMap over a slice cost 0.45 µs a pet, thirty times as much (docs/benchmarks.md).
      const values: unknown[] = []
      for (let i = start; i < start + size; i++) values.push(...petRowValues(pets[i]!, createdAt))
      lastInserted = connection.run(INSERT_PETS.get(size)!, values).lastInsertRowid
    }
  }
  const { changes: recorded } = connection.run(RECORD_PETS_CREATED, [createdAt, firstId, lastId])
  if (lastInserted !== lastId || recorded !== pets.length) throw new Error('other rows were inserted among the pets just inserted')
}
