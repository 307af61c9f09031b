import { CompiledQuery, sql } from 'kysely'
import { isoNow, type Clock } from '../../clock.js'
import type { Db } from '../../db/database.js'
import { EVENT_INSERT_LOCK, IDEMPOTENCY_CLAIM_LOCK, lockIdOrder, PET_INSERT_LOCK } from '../../db/id-order-lock.js'
import type { Pet } from '../../pets/pet.schemas.js'
import { GroupCommit } from '../group-commit.js'
import { PET_COLUMN_LIST, PET_INSERT_COLUMNS, petJsonSql, petOfValues } from '../pet-columns.js'
import type { IdempotencyClaim, PetCreate, PetCreated, PetFilter, PetPage, PetStore, PetValues, StoredResponse } from '../pet-store.js'
import { StoreReadCache } from '../read-cache.js'
import { createdResponse, saveResponses, STORED_RESPONSE_SELECT_LIST } from '../stored-response.js'

const STORED_RESPONSE = sql.raw(STORED_RESPONSE_SELECT_LIST)

// The reads' JSON is written by PostgreSQL: parsing 20 rows (int8 into BigInt) and serializing them
// again cost the instance more than the query. One statement a page, its values bound first
// status, then category, then the position and the page's size; `more` says whether pets follow.
const PET_JSON = petJsonSql('postgres')
const PAGE_STATEMENTS = [false, true].flatMap((byCategory) => [false, true].map((byStatus) => {
  const values = [...(byStatus ? ['status'] : []), ...(byCategory ? ['category_id'] : [])]
  const filter = values.map((column, i) => `${column} = $${i + 1} and `).join('')
  const [after, limit] = [`$${values.length + 1}`, `$${values.length + 2}`]
  return `with page as (select ${PET_COLUMN_LIST} from pets where ${filter}id > ${after} order by id limit ${limit})
    select '[' || coalesce(string_agg(${PET_JSON}, ',' order by id), '') || ']' as json, max(id)::text as "lastId",
      count(*) = ${limit} and exists (select 1 from pets where ${filter}id > (select max(id) from page)) as more
    from page`
}))
const PET_BY_ID = `select ${PET_JSON} as json from pets where id = $1`

// Pets with their `pet.created` events (written by PostgreSQL from the rows just inserted, in the pets'
// order), in one statement that first takes the locks ordering pet ids, then event ids (see
// lockIdOrder: no row can be formed, and no id drawn, before the join has the locks' row). So it can
// run as a transaction of its own, a group of creates in one round trip; its wait for the locks has a
// deadline of its own ($5), as no `set local` comes before it. The pets come as arrays, in the order
// given: one statement of five values, for any number. Each pet's id is drawn before its row is
// inserted (`numbered`, read twice, is computed once), so that the statement answers only the ids, in
// the order given, as one text: the service has the rest, without parsing a row a pet (int8 into
// BigInt) and matching the rows to the pets.
const INSERT_PETS = `with locked as materialized (select set_config('lock_timeout', $5, true),
    pg_advisory_xact_lock(${PET_INSERT_LOCK}), pg_advisory_xact_lock(${EVENT_INSERT_LOCK}), pg_get_serial_sequence('pets', 'id')::regclass as ids),
  numbered as (select nextval(locked.ids) as id, pet.* from locked,
      unnest($1::text[], $2::bigint[], $3::text[]) with ordinality as pet (name, category_id, status, position)
    order by pet.position),
  created as (insert into pets (id, ${PET_INSERT_COLUMNS}) select id, name, category_id, status, $4 from numbered
    returning ${PET_COLUMN_LIST}),
  recorded as (insert into events (type, occurred_at, data) select 'pet.created', $4, ${PET_JSON} from created order by id)
  select coalesce(string_agg(id::text, ',' order by position), '') as ids from numbered`

/** Runs one statement on the store's connections, as a transaction of its own, and returns its rows. */
export type PostgresQuery = <Row>(text: string, values: unknown[]) => Promise<Row[]>

export interface PostgresPetStoreOptions {
  /** Kysely, for the creates that need a transaction of several statements. */
  db: Db
  /** The hot statements, without a query builder. */
  query: PostgresQuery
  /** What changes with every commit to the pets, or undefined while that cannot be told (see PostgresChangeFeed). */
  version: () => string | undefined
  /** Called when pets were committed by `query`, as the deadline pool calls it for Kysely's commits. */
  changed: () => void
  /** Longest wait for the locks a create takes. */
  lockTimeoutMs: number
  clock: Clock
}

/**
 * Pets on PostgreSQL, shared with other instances. Reads are answered from memory while no pet has
 * changed (`version`, see PostgresChangeFeed). Creates are committed in groups, each under the lock
 * that orders pet ids (see lockIdOrder), with a `pet.created` event for each pet.
 */
export class PostgresPetStore implements PetStore {
  readonly #creates = new GroupCommit<PetCreate, PetCreated>((creates) => this.#commit(creates))
  readonly #db: Db
  readonly #query: PostgresQuery
  readonly #cache = new StoreReadCache()
  readonly #version: () => string | undefined
  readonly #changed: () => void
  readonly #lockTimeout: string
  readonly #clock: Clock

  constructor ({ db, query, version, changed, lockTimeoutMs, clock }: PostgresPetStoreOptions) {
    this.#db = db
    this.#query = query
    this.#version = version
    this.#changed = changed
    this.#lockTimeout = String(lockTimeoutMs)
    this.#clock = clock
  }

  async findPage ({ status, categoryId, afterId = 0n, limit }: PetFilter): Promise<PetPage> {
    return await this.#cache.getAsync(`pets?${status}&${categoryId}&${afterId}&${limit}`, this.#version, async () => {
      const filter = [status, categoryId].filter((value) => value !== undefined)
      const statement = PAGE_STATEMENTS[(status === undefined ? 0 : 1) + (categoryId === undefined ? 0 : 2)]!
      const [page] = await this.#query<{ json: string, lastId: string | null, more: boolean }>(statement, [...filter, afterId, limit])
      return { json: page!.json, nextAfterId: page!.more ? BigInt(page!.lastId!) : undefined }
    })
  }

  async findById (id: bigint): Promise<string | undefined> {
    const pet = await this.#cache.getAsync(`pet ${id}`, this.#version, async () => (await this.#query<{ json: string }>(PET_BY_ID, [id]))[0])
    return pet?.json
  }

  async create (request: PetCreate): Promise<PetCreated> {
    return await this.#creates.add(request)
  }

  async insertMany (pets: readonly PetValues[]): Promise<Pet[]> {
    return await this.#insert(pets, isoNow(this.#clock))
  }

  /**
   * After a bulk load, gives the planner the table's new size at once rather than when autovacuum
   * next looks (up to a minute): meanwhile, taking a grown table for a small one, it sorted every pet
   * of a status for each listPets page instead of walking the (status, id) index (1.5 ms instead of
   * 0.05 at 10,000 pets).
   */
  async refreshStatistics (): Promise<void> {
    await sql`analyze pets`.execute(this.#db)
  }

  /**
   * A group of plain creates is one statement (INSERT_PETS). With claims of idempotency keys, one
   * transaction for the group, under the lock every claim of a key takes (a category's too), then the
   * pets' locks: so a transaction of another instance that claims one of these keys has committed (and
   * is seen) or not begun, and the keys can be looked at, then claimed, without a race. Each statement
   * is a round trip the next group waits for.
   */
  async #commit (creates: PetCreate[]): Promise<PetCreated[]> {
    const createdAt = isoNow(this.#clock)
    const claims = creates.flatMap(({ idempotency }) => idempotency === undefined ? [] : [idempotency])
    if (claims.length === 0) {
      const pets = await this.#insert(creates.map(({ pet }) => pet), createdAt)
      return pets.map((pet) => ({ outcome: 'created', pet }))
    }
    return await this.#db.transaction().execute(async (trx) => {
      await lockIdOrder(trx, IDEMPOTENCY_CLAIM_LOCK)
      const stored = await findStoredResponses(trx, claims)
      const outcomes = creates.map(({ idempotency: claim }): PetCreated | undefined => {
        const response = claim === undefined ? undefined : stored.get(claimSlot(claim.apiKeyId, claim.key))
        return response === undefined ? undefined : { outcome: 'replayed', response }
      })
      const toCreate = creates.filter((_, i) => outcomes[i] === undefined)
      const toInsert = toCreate.map(({ pet }) => pet)
      const { rows } = await trx.executeQuery<InsertedIds>(CompiledQuery.raw(INSERT_PETS, this.#insertValues(toInsert, createdAt)))
      const pets = petsOf(toInsert, rows)
      let next = 0
      const created: PetCreated[] = []
      const answers: Array<{ claim: IdempotencyClaim, response: StoredResponse }> = []
      for (const [i, outcome] of outcomes.entries()) {
        if (outcome !== undefined) {
          created.push(outcome)
          continue
        }
        const pet = pets[next++]!
        const claim = creates[i]!.idempotency
        if (claim === undefined) {
          created.push({ outcome: 'created', pet })
          continue
        }
        const response = createdResponse(claim, pet)
        answers.push({ claim, response })
        created.push({ outcome: 'created', pet, response })
      }
      await saveResponses(trx, answers, createdAt)
      return created
    })
  }

  async #insert (pets: readonly PetValues[], createdAt: string): Promise<Pet[]> {
    const inserted = await this.#query<InsertedIds>(INSERT_PETS, this.#insertValues(pets, createdAt))
    this.#changed()
    return petsOf(pets, inserted)
  }

  #insertValues (pets: readonly PetValues[], createdAt: string): unknown[] {
    return [pets.map(({ name }) => name), pets.map(({ categoryId }) => categoryId), pets.map(({ status }) => status), createdAt, this.#lockTimeout]
  }
}

/** What INSERT_PETS answers: the pets' ids, in the order given, joined by commas. */
interface InsertedIds { ids: string }

function petsOf (pets: readonly PetValues[], [inserted]: readonly InsertedIds[]): Pet[] {
  const ids = inserted!.ids.split(',')
  return pets.map((pet, i) => petOfValues(BigInt(ids[i]!), pet))
}

function claimSlot (apiKeyId: bigint, key: string): string {
  return `${apiKeyId}:${key}`
}

/**
 * The answers kept under the claims' keys, by claimSlot, after deleting those older than each claim's
 * retention: one statement for the whole group (its select sees the table as it was before the delete,
 * so it leaves out what the delete took).
 */
async function findStoredResponses (trx: Db, claims: readonly IdempotencyClaim[]): Promise<Map<string, StoredResponse>> {
  if (claims.length === 0) return new Map()
  const claimed = sql.join(claims.map(({ apiKeyId, key, notBefore }) => sql`(${apiKeyId}::bigint, ${key}::text, ${notBefore}::text)`))
  const { rows } = await sql<StoredResponse & { apiKeyId: bigint, key: string }>`with claims (api_key_id, key, not_before) as (values ${claimed}),
    expired as (delete from idempotency_keys k using claims c
      where k.api_key_id = c.api_key_id and k.key = c.key and k.created_at < c.not_before returning k.api_key_id, k.key)
    select api_key_id as "apiKeyId", key, ${STORED_RESPONSE} from idempotency_keys
    where (api_key_id, key) in (select api_key_id, key from claims) and (api_key_id, key) not in (select api_key_id, key from expired)`.execute(trx)
  return new Map(rows.map(({ apiKeyId, key, ...response }) => [claimSlot(apiKeyId, key), response]))
}
