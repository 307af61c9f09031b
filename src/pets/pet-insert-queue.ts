import type { Db } from '../db/database.js'
import { insertPetBatch, insertPetsNow, type PetValues } from './pet.repository.js'
import type { Pet } from './pet.schemas.js'

interface Waiting {
  values: PetValues
  resolve: (pet: Pet) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: creates that arrive in the same turn of the event loop are written in one
 * transaction, and each is answered only after that commit, so a 201 still means "committed" while
 * one commit (one WAL write, one fsync under DURABILITY=strict) serves many requests.
 */
export class PetInsertQueue {
  #waiting: Waiting[] = []

  constructor (private readonly db: Db) {}

  insert (values: PetValues): Promise<Pet> {
    return new Promise((resolve, reject) => {
      if (this.#waiting.push({ values, resolve, reject }) === 1) setImmediate(() => { void this.#commit() })
    })
  }

  async #commit (): Promise<void> {
    const batch = this.#waiting
    this.#waiting = []
    try {
      const values = batch.map((waiting) => waiting.values)
      const pets = insertPetsNow(this.db, values) ?? await this.db.transaction().execute((trx) => insertPetBatch(trx, values))
      batch.forEach(({ resolve }, i) => resolve(pets[i]!))
    } catch (error) {
      // Nothing of the batch was committed: every request in it fails (503 for a store fault).
      for (const { reject } of batch) reject(error)
    }
  }
}
