import type { Db } from '../db/database.js'
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
 * one commit (one WAL write, one fsync under DURABILITY=strict) serves many requests.
 */
export class PetInsertQueue {
  #waiting: Waiting[] = []
  #committing = false

  constructor (private readonly db: Db) {}

  insert (values: PetValues): Promise<Pet> {
    return new Promise((resolve, reject) => {
      if (this.#waiting.push({ values, resolve, reject }) === 1 && !this.#committing) this.#commitSoon()
    })
  }

  #commitSoon (): void {
    setImmediate(() => { void this.#commit() })
  }

  async #commit (): Promise<void> {
    const batch = this.#waiting
    this.#waiting = []
    this.#committing = true
    try {
      const values = batch.map((waiting) => waiting.values)
      const pets = insertPetsNow(this.db, values) ?? await this.db.transaction().execute((trx) => insertPetBatch(trx, values))
      batch.forEach(({ resolve }, i) => resolve(pets[i]!))
    } catch (error) {
      // Nothing of the batch was committed: every request in it fails (503 for a store fault).
      for (const { reject } of batch) reject(error)
    } finally {
      this.#committing = false
      if (this.#waiting.length > 0) this.#commitSoon()
    }
  }
}
