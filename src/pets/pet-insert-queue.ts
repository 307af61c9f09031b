import type { Db } from '../db/database.js'
import type { PetWriterThread } from './pet-writer-thread.js'
import { insertPetBatch, insertPetsNow, type PetValues } from './pet.repository.js'
import type { Pet } from './pet.schemas.js'

interface Waiting {
  values: PetValues
  resolve: (pet: Pet) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: creates that arrive in the same turn of the event loop, or while the group before
 * them is committing (a round trip and the server's fsync on PostgreSQL), are written in one
 * transaction, and each is answered only after that commit. So a 201 still means "committed" while
 * one commit (one WAL write, one fsync under DURABILITY=strict) serves many requests. With a writer
 * thread, groups are committed there, and the next one gathers while the thread waits for the disk.
 */
export class PetInsertQueue {
  #waiting: Waiting[] = []
  #committing = false

  constructor (private readonly db: Db, private readonly writer?: PetWriterThread) {}

  insert (values: PetValues): Promise<Pet> {
    return new Promise((resolve, reject) => {
      if (this.#waiting.push({ values, resolve, reject }) === 1 && !this.#committing) this.#commitSoon()
    })
  }

  #commitSoon (): void {
    setImmediate(() => { void this.#commit() })
  }

  /** Commits on the store's own connection: straight on SQLite's when it is free, else through Kysely. */
  async #insertHere (values: PetValues[]): Promise<Pet[]> {
    return insertPetsNow(this.db, values) ?? await this.db.transaction().execute((trx) => insertPetBatch(trx, values))
  }

  async #commit (): Promise<void> {
    const batch = this.#waiting
    this.#waiting = []
    this.#committing = true
    try {
      const values = batch.map((waiting) => waiting.values)
      const pets = this.writer?.running === true ? await this.writer.insert(values) : await this.#insertHere(values)
      batch.forEach(({ resolve }, i) => resolve(pets[i]!))
    } catch (error) {
      // The batch was not committed (or, if the writer thread was lost meanwhile, may have been, unseen):
      // every request in it fails (503 for a store fault) and none is answered 201.
      for (const { reject } of batch) reject(error)
    } finally {
      this.#committing = false
      if (this.#waiting.length > 0) this.#commitSoon()
    }
  }
}
