import { isoNow, type Clock } from '../../clock.js'
import type { Db } from '../../db/database.js'
import { oncePerTurn } from '../../end-of-turn.js'
import type { Pet } from '../../pets/pet.schemas.js'
import { GroupCommit } from '../group-commit.js'
import { PET_COLUMN_LIST, petJsonSql } from '../pet-columns.js'
import type { PetCreate, PetCreated, PetFilter, PetPage, PetStore, PetValues } from '../pet-store.js'
import type { PetWriterThread } from './pet-writer-thread.js'
import { StoreReadCache } from '../read-cache.js'
import type { SqliteConnection } from './sqlite-connection.js'
import { commitCreates, insertPets } from './sqlite-pet-writes.js'

// SQLite writes the JSON itself: building 20 row objects (with BigInt ids) and serializing them cost
// more than the query. The SQL is constant, so its statement stays prepared.
const PET_JSON = petJsonSql('sqlite')
const PAGE = (filter: string) => `select json_group_array(${PET_JSON}) as json, count(*) as count, max(id) as "lastId" ` +
  `from (select ${PET_COLUMN_LIST} from pets where ${filter} id > ? order by id limit ?)`
const MORE_AFTER = (filter: string) => `select 1 as more from pets where ${filter} id > ? limit 1`
/** The statements of a page, indexed by `filterKey`; the filter's values are bound first, status before category. */
const PAGE_STATEMENTS = [false, true].flatMap((byCategory) => [false, true].map((byStatus) => {
  const filter = `${byStatus ? 'status = ? and ' : ''}${byCategory ? 'category_id = ? and ' : ''}`
  return { page: PAGE(filter), more: MORE_AFTER(filter) }
}))
const PET_BY_ID = `select ${PET_JSON} as json from pets where id = ?`

export interface SqlitePetStoreParts {
  /** Kysely on the writing connection: taking its connection waits for any transaction open on it. */
  db: Db
  writer: SqliteConnection
  /** Serves the reads, apart from the writer, so that no read sees what is not committed yet. */
  reader: SqliteConnection
  /** Commits creates under DURABILITY=strict, while it runs. */
  writerThread: PetWriterThread | undefined
  /** What changes with every commit to the file (see StoreReadCache). */
  commitVersion: () => string
  clock: Clock
}

/**
 * Pets on SQLite, on the fast path for every request: reads run straight on better-sqlite3 (Kysely's
 * executor cost as much as a small query) and are answered from memory while the file is unchanged;
 * creates are committed in groups, synchronously on the writing connection or on the writer thread.
 */
export class SqlitePetStore implements PetStore {
  readonly #parts: SqlitePetStoreParts
  readonly #cache = new StoreReadCache()
  readonly #version: () => Promise<string>
  readonly #creates: GroupCommit<PetCreate, PetCreated>

  constructor (parts: SqlitePetStoreParts) {
    this.#parts = parts
    // The writer thread merges the groups that queue while it commits (see pet-writer.worker).
    this.#creates = new GroupCommit((creates) => this.#commit(creates), { pipelined: parts.writerThread !== undefined })
    // Read once for all the reads of a turn, at its end (a system call a read was a tenth of a cached
    // getPet): every request of the turn was received before it, so each is still answered with the
    // store as it was after the request arrived, as if the version were read for each. Answers leave no
    // later for it: the turn's writes are held to its end anyway (see write-coalescing).
    this.#version = oncePerTurn(parts.commitVersion)
  }

  async findPage ({ status, categoryId, afterId = 0n, limit }: PetFilter): Promise<PetPage> {
    return this.#cache.get(`pets?${status}&${categoryId}&${afterId}&${limit}`, await this.#version(), () => {
      const { reader } = this.#parts
      const { page: pageSql, more: moreSql } = PAGE_STATEMENTS[filterKey(status !== undefined, categoryId !== undefined)]!
      const filter = [status, categoryId].filter((value) => value !== undefined)
      const [page] = reader.query<{ json: string, count: bigint, lastId: bigint | null }>(pageSql, [...filter, afterId, limit])
      if (page === undefined || page.lastId === null || page.count < BigInt(limit)) return { json: page?.json ?? '[]', nextAfterId: undefined }
      const more = reader.query(moreSql, [...filter, page.lastId])
      return { json: page.json, nextAfterId: more.length > 0 ? page.lastId : undefined }
    })
  }

  async findById (id: bigint): Promise<string | undefined> {
    return this.#cache.get(`pet ${id}`, await this.#version(), () => this.#parts.reader.query<{ json: string }>(PET_BY_ID, [id])[0])?.json
  }

  async create (request: PetCreate): Promise<PetCreated> {
    return await this.#creates.add(request)
  }

  async insertMany (pets: readonly PetValues[]): Promise<Pet[]> {
    const createdAt = isoNow(this.#parts.clock)
    return await this.#onWriter((writer) => writer.writeTransaction(() => insertPets(writer, pets, createdAt)))
  }

  async refreshStatistics (): Promise<void> {
    // SQLite's planner keeps no statistics unless asked to. A status and a category together walk the
    // category's index (operations.md says what a status rare in it costs); statistics of averages
    // would not pick the narrower for one rare value.
  }

  async #commit (creates: PetCreate[]): Promise<PetCreated[]> {
    const createdAt = isoNow(this.#parts.clock)
    const { writerThread } = this.#parts
    if (writerThread?.running === true) return await writerThread.commit(creates, createdAt)
    return await this.#onWriter((writer) => commitCreates(writer, creates, createdAt))
  }

  /** Runs `work` on the writing connection once no Kysely transaction holds it (an order, say). */
  async #onWriter<T> (work: (writer: SqliteConnection) => T): Promise<T> {
    return await this.#parts.db.connection().execute(async () => work(this.#parts.writer))
  }
}

function filterKey (byStatus: boolean, byCategory: boolean): number {
  return (byStatus ? 1 : 0) + (byCategory ? 2 : 0)
}
