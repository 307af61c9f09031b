import { sql } from 'kysely'
import { isoNow, type Clock } from '../../clock.js'
import type { Db } from '../../db/database.js'
import { IDEMPOTENCY_CLAIM_LOCK, lockIdOrder, PET_INSERT_LOCK } from '../../db/id-order-lock.js'
import { recordEvents, type NewEvent } from '../../events/event-log.js'
import type { Pet } from '../../pets/pet.schemas.js'
import { GroupCommit } from '../group-commit.js'
import { inGivenOrder, PET_COLUMN_LIST, PET_INSERT_COLUMNS, PET_SELECT_LIST, petJsonSql, petRowValues } from '../pet-columns.js'
import type { IdempotencyClaim, PetCreate, PetCreated, PetFilter, PetPage, PetStore, PetValues, StoredResponse } from '../pet-store.js'
import type { StoreReadCache } from '../read-cache.js'
import { createdResponse, saveResponses, STORED_RESPONSE_SELECT_LIST } from '../stored-response.js'

const PETS = sql.raw(PET_SELECT_LIST)
const STORED_RESPONSE = sql.raw(STORED_RESPONSE_SELECT_LIST)
// Four bound values a row: well within PostgreSQL's 65,535 a statement, however many creates a group
// gathers (pipelined requests are not bounded by the connection limit).
const ROWS_PER_INSERT = 1000

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

/** Runs one statement on the store's connections and returns its rows. */
export type PostgresRead = <Row>(text: string, values: unknown[]) => Promise<Row[]>

/**
 * Pets on PostgreSQL, shared with other instances. Reads are answered from memory while no pet has
 * changed (`cache`, see PostgresChangeFeed). Creates are committed in groups, each under the lock
 * that orders pet ids (see lockIdOrder), with a `pet.created` event for each pet.
 */
export class PostgresPetStore implements PetStore {
  readonly #creates = new GroupCommit<PetCreate, PetCreated>((creates) => this.#commit(creates))

  constructor (private readonly db: Db, private readonly read: PostgresRead, private readonly cache: StoreReadCache, private readonly clock: Clock) {}

  async findPage ({ status, categoryId, afterId = 0n, limit }: PetFilter): Promise<PetPage> {
    return await this.cache.getAsync(`pets?${status}&${categoryId}&${afterId}&${limit}`, async () => {
      const filter = [status, categoryId].filter((value) => value !== undefined)
      const statement = PAGE_STATEMENTS[(status === undefined ? 0 : 1) + (categoryId === undefined ? 0 : 2)]!
      const [page] = await this.read<{ json: string, lastId: string | null, more: boolean }>(statement, [...filter, afterId, limit])
      return { json: page!.json, nextAfterId: page!.more ? BigInt(page!.lastId!) : undefined }
    })
  }

  async findById (id: bigint): Promise<string | undefined> {
    const pet = await this.cache.getAsync(`pet ${id}`, async () => (await this.read<{ json: string }>(PET_BY_ID, [id]))[0])
    return pet?.json
  }

  async create (request: PetCreate): Promise<PetCreated> {
    return await this.#creates.add(request)
  }

  async insertMany (pets: readonly PetValues[]): Promise<Pet[]> {
    const createdAt = isoNow(this.clock)
    return await this.db.transaction().execute(async (trx) => {
      await lockIdOrder(trx, PET_INSERT_LOCK)
      const stored = await insertPets(trx, pets, createdAt)
      await recordEvents(trx, createdAt, petsCreated(stored))
      return stored
    })
  }

  /**
   * After a bulk load, gives the planner the table's new size at once rather than when autovacuum
   * next looks (up to a minute): meanwhile, taking a grown table for a small one, it sorted every pet
   * of a status for each listPets page instead of walking the (status, id) index (1.5 ms instead of
   * 0.05 at 10,000 pets).
   */
  async refreshStatistics (): Promise<void> {
    await sql`analyze pets`.execute(this.db)
  }

  /**
   * One transaction for the group, under the lock every pet create takes, and the one every claim of
   * an idempotency key takes (a category's too): so a transaction of another instance that claims one
   * of these keys has committed (and is seen) or not begun, and the keys can be looked at, then
   * claimed, without a race.
   */
  async #commit (creates: PetCreate[]): Promise<PetCreated[]> {
    const createdAt = isoNow(this.clock)
    return await this.db.transaction().execute(async (trx) => {
      const claims = creates.flatMap(({ idempotency }) => idempotency === undefined ? [] : [idempotency])
      if (claims.length > 0) await lockIdOrder(trx, IDEMPOTENCY_CLAIM_LOCK)
      await lockIdOrder(trx, PET_INSERT_LOCK)
      // The group's keys in three statements, not three per claim: a round trip each is what a group waits for.
      const stored = await findStoredResponses(trx, claims)
      const outcomes = creates.map(({ idempotency: claim }): PetCreated | undefined => {
        const response = claim === undefined ? undefined : stored.get(claimSlot(claim.apiKeyId, claim.key))
        return response === undefined ? undefined : { outcome: 'replayed', response }
      })
      const toCreate = creates.filter((_, i) => outcomes[i] === undefined)
      const pets = await insertPets(trx, toCreate.map(({ pet }) => pet), createdAt)
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
      // Last, as every transaction that records events (see recordEvents).
      await recordEvents(trx, createdAt, petsCreated(pets))
      return created
    })
  }
}

function claimSlot (apiKeyId: bigint, key: string): string {
  return `${apiKeyId}:${key}`
}

/**
 * The answers kept under the claims' keys, by claimSlot, after deleting those older than each claim's
 * retention: two statements for the whole group.
 */
async function findStoredResponses (trx: Db, claims: readonly IdempotencyClaim[]): Promise<Map<string, StoredResponse>> {
  if (claims.length === 0) return new Map()
  const expired = sql.join(claims.map(({ apiKeyId, key, notBefore }) => sql`(${apiKeyId}::bigint, ${key}::text, ${notBefore}::text)`))
  await sql`delete from idempotency_keys k using (values ${expired}) as c(api_key_id, key, not_before)
    where k.api_key_id = c.api_key_id and k.key = c.key and k.created_at < c.not_before`.execute(trx)
  const keys = sql.join(claims.map(({ apiKeyId, key }) => sql`(${apiKeyId}::bigint, ${key}::text)`))
  const { rows } = await sql<StoredResponse & { apiKeyId: bigint, key: string }>`select api_key_id as "apiKeyId", key, ${STORED_RESPONSE}
    from idempotency_keys where (api_key_id, key) in (${keys})`.execute(trx)
  return new Map(rows.map(({ apiKeyId, key, ...response }) => [claimSlot(apiKeyId, key), response]))
}

/** Inserts pets, an INSERT per thousand, inside the caller's transaction and returns them with their ids, in the order given. */
async function insertPets (trx: Db, pets: readonly PetValues[], createdAt: string): Promise<Pet[]> {
  const stored: Pet[] = []
  for (let start = 0; start < pets.length; start += ROWS_PER_INSERT) {
    const rows = pets.slice(start, start + ROWS_PER_INSERT).map((pet) => sql`(${sql.join(petRowValues(pet, createdAt))})`)
    const { rows: inserted } = await sql<Pet>`insert into pets ${sql.raw(PET_INSERT_COLUMNS)} values ${sql.join(rows)} returning ${PETS}`.execute(trx)
    stored.push(...inserted)
  }
  return inGivenOrder(pets, stored)
}

function petsCreated (pets: readonly Pet[]): NewEvent[] {
  return pets.map((pet) => ({ type: 'pet.created', data: pet }))
}
