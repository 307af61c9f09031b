import { stringify as stringifyExact } from 'lossless-json'
import { sql } from 'kysely'
import type { Db } from '../db/database.js'
import { compiledOnce } from '../db/compiled-once.js'
import { isPostgres } from '../db/dialect.js'
import { lockIdOrder } from '../db/id-order-lock.js'
import { sqliteRead, sqliteTransactionNow } from '../db/sqlite-direct.js'
import type { Pet, PetStatus } from './pet.schemas.js'

const PET_COLUMNS = ['id', 'name', 'category_id as categoryId', 'status'] as const

export interface PetFilter {
  status: PetStatus | undefined
  /** Keyset position: only pets with a greater id. */
  afterId?: bigint | undefined
  limit: number
}

/** A page of pets as JSON text, and where it ends. */
export interface PetPage {
  /** The JSON array of the page's pets, in ascending id order. */
  json: string
  /** The id of the last pet on the page, when it is full and more pets follow. */
  nextAfterId: bigint | undefined
}

// On SQLite the store writes the JSON itself: building 20 row objects (with BigInt ids) and
// serializing them cost more than the query. The SQL is constant, so its statement stays prepared.
const PET_JSON = "json_object('id', id, 'name', name, 'categoryId', category_id, 'status', status)"
const SQLITE_PAGE = (filter: string) => `select json_group_array(${PET_JSON}) as json, count(*) as count, max(id) as "lastId" ` +
  `from (select id, name, category_id, status from pets where ${filter} id > ? order by id limit ?)`
const SQLITE_PAGE_ALL = SQLITE_PAGE('')
const SQLITE_PAGE_BY_STATUS = SQLITE_PAGE('status = ? and')
const SQLITE_MORE_AFTER = (filter: string) => `select 1 as more from pets where ${filter} id > ? limit 1`
const SQLITE_MORE_ALL = SQLITE_MORE_AFTER('')
const SQLITE_MORE_BY_STATUS = SQLITE_MORE_AFTER('status = ? and')
const SQLITE_PET_BY_ID = `select ${PET_JSON} as json from pets where id = ?`

/** Pets in ascending id order, after a keyset position; the (status, id) index keeps this flat as the store grows. */
export async function findPetPage (db: Db, { status, afterId = 0n, limit }: PetFilter): Promise<PetPage> {
  if (isPostgres(db)) {
    let query = db.selectFrom('pets').select(PET_COLUMNS).where('id', '>', afterId).orderBy('id').limit(limit + 1)
    if (status !== undefined) query = query.where('status', '=', status)
    const pets = await query.execute()
    const more = pets.length > limit
    if (more) pets.length = limit
    return { json: stringifyExact(pets)!, nextAfterId: more ? pets[limit - 1]!.id : undefined }
  }
  const filter = status === undefined ? [] : [status]
  const [page] = await sqliteRead<{ json: string, count: bigint, lastId: bigint | null }>(
    db, status === undefined ? SQLITE_PAGE_ALL : SQLITE_PAGE_BY_STATUS, [...filter, afterId, limit])
  if (page === undefined || page.lastId === null || page.count < BigInt(limit)) return { json: page?.json ?? '[]', nextAfterId: undefined }
  const more = await sqliteRead(db, status === undefined ? SQLITE_MORE_ALL : SQLITE_MORE_BY_STATUS, [...filter, page.lastId])
  return { json: page.json, nextAfterId: more.length > 0 ? page.lastId : undefined }
}

/** One pet as JSON text, or undefined when there is none with this id. */
export async function findPetJsonById (db: Db, id: bigint): Promise<string | undefined> {
  if (isPostgres(db)) {
    const pet = await db.selectFrom('pets').select(PET_COLUMNS).where('id', '=', id).executeTakeFirst()
    return pet === undefined ? undefined : stringifyExact(pet)
  }
  const [row] = await sqliteRead<{ json: string }>(db, SQLITE_PET_BY_ID, [id])
  return row?.json
}

export interface PetValues {
  name: string
  categoryId: bigint
  status: PetStatus
}

// Names the lock that orders pet ids (see lockIdOrder).
const PET_INSERT_LOCK = 7_340_001

const INSERT_PET = compiledOnce((db) => db.insertInto('pets')
  .values({ name: '', category_id: 0n, status: 'available', created_at: '' })
  .returning(PET_COLUMNS))

/** Stores a pet and returns it with the id the store assigned; outside a transaction, resolves once it is committed. */
export async function insertPet (db: Db, pet: PetValues): Promise<Pet> {
  const insert = async (trx: Db) => {
    const { rows } = await trx.executeQuery(INSERT_PET(trx, [pet.name, pet.categoryId, pet.status, new Date().toISOString()]))
    return rows[0]!
  }
  if (!isPostgres(db)) return await insert(db)
  const lockedInsert = async (trx: Db) => {
    await lockIdOrder(trx, PET_INSERT_LOCK)
    return await insert(trx)
  }
  return db.isTransaction ? await lockedInsert(db) : await db.transaction().execute(lockedInsert)
}

// Four bound values a row: well within SQLite's 32,766 and PostgreSQL's 65,535 a statement, however
// many creates a group gathers (pipelined requests are not bounded by the connection limit).
const ROWS_PER_INSERT = 1000

/**
 * Stores many pets with an INSERT per thousand, inside the caller's transaction (on PostgreSQL under
 * the lock that orders pet ids), and returns them with their ids, in the order given: for group
 * commits and bulk loads, where a round trip per pet would dominate.
 */
export async function insertPetBatch (trx: Db, pets: readonly PetValues[]): Promise<Pet[]> {
  if (pets.length === 0) return []
  await lockIdOrder(trx, PET_INSERT_LOCK)
  const createdAt = new Date().toISOString()
  const stored: Pet[] = []
  for (let start = 0; start < pets.length; start += ROWS_PER_INSERT) {
    stored.push(...await trx.insertInto('pets')
      .values(pets.slice(start, start + ROWS_PER_INSERT).map((pet) => ({ name: pet.name, category_id: pet.categoryId, status: pet.status, created_at: createdAt })))
      .returning(PET_COLUMNS)
      .execute())
  }
  return inGivenOrder(pets, stored)
}

// Neither store promises RETURNING rows in the order of VALUES: each pet takes a row of the same
// content, so only pets that no one can tell apart may trade ids.
function inGivenOrder (pets: readonly PetValues[], stored: readonly Pet[]): Pet[] {
  const rowsByContent = new Map<string, Pet[]>()
  for (const row of stored) {
    const rows = rowsByContent.get(contentOf(row))
    if (rows === undefined) rowsByContent.set(contentOf(row), [row])
    else rows.push(row)
  }
  return pets.map((pet) => rowsByContent.get(contentOf(pet))!.shift()!)
}

function contentOf ({ name, categoryId, status }: PetValues): string {
  return `${status} ${categoryId} ${name}`
}

// A group on SQLite is inserted in chunks of these sizes (37 pets: 32, 4, 1), so that a few prepared
// statements serve any group: one INSERT of 32 rows costs SQLite two thirds of 32 single ones.
const SQLITE_CHUNK_SIZES = [512, 256, 128, 64, 32, 16, 8, 4, 2, 1]
const sqliteInsertSql = new Map<number, string>()

function sqliteInsertOf (db: Db, rows: number): string {
  let text = sqliteInsertSql.get(rows)
  if (text === undefined) {
    const row = { name: '', category_id: 0n, status: 'available', created_at: '' } as const
    text = db.insertInto('pets').values(Array.from({ length: rows }, () => row)).returning(PET_COLUMNS).compile().sql
    sqliteInsertSql.set(rows, text)
  }
  return text
}

/**
 * Stores pets in one transaction at once, straight on a free SQLite connection, and returns them
 * with their ids, in the order given; undefined, with nothing stored, when the caller must use
 * `insertPetBatch` in a Kysely transaction instead (see `sqliteTransactionNow`).
 */
export function insertPetsNow (db: Db, pets: readonly PetValues[]): Pet[] | undefined {
  const createdAt = new Date().toISOString()
  return sqliteTransactionNow(db, (query) => {
    const stored: Pet[] = []
    let start = 0
    for (const size of SQLITE_CHUNK_SIZES) {
      for (; pets.length - start >= size; start += size) {
        const values = pets.slice(start, start + size).flatMap((pet) => [pet.name, pet.categoryId, pet.status, createdAt])
        stored.push(...query<Pet>(sqliteInsertOf(db, size), values))
      }
    }
    return inGivenOrder(pets, stored)
  })
}

/**
 * After a bulk load on PostgreSQL, gives the planner the table's new size at once rather than when
 * autovacuum next looks (up to a minute): meanwhile, taking a grown table for a small one, it sorted
 * every pet of a status for each listPets page instead of walking the (status, id) index (1.5 ms
 * instead of 0.05 at 10,000 pets). SQLite's planner keeps no statistics unless asked to.
 */
export async function refreshPetStatistics (db: Db): Promise<void> {
  if (isPostgres(db)) await sql`analyze pets`.execute(db)
}
