import type { Worker } from 'node:worker_threads'
import type { Durability } from '../db/create-db.js'
import type { Db } from '../db/database.js'
import { sqliteFileOf } from '../db/sqlite-direct.js'
import { startWorker, stopWorker } from '../worker-thread.js'
import type { PetValues } from './pet.repository.js'
import type { Pet } from './pet.schemas.js'

/** What the writer thread answers for each group: the stored pets in the order sent, or the store's error. */
export type WriterAnswer = { pets: Pet[] } | { error: { code: string | undefined, message: string } }

export interface WriterOptions {
  durability: Durability
  /** The writer's `wal_autocheckpoint`, when another thread checkpoints (see WalCheckpointer). */
  autocheckpointPages?: number | undefined
}

export type WriterWorkerData = WriterOptions & { path: string }

interface Pending {
  resolve: (pets: Pet[]) => void
  reject: (error: unknown) => void
}

/**
 * Commits groups of pets on a thread of its own, with its own connection to the SQLite file. Under
 * DURABILITY=strict each commit waits for an fsync (a quarter to half a millisecond here); on the
 * event loop that wait stopped every request, while on this thread the loop keeps serving and
 * gathering the next group. SQLite publishes a commit to other connections only after its fsync, so
 * readers still see a pet only once it is durable. Without the fsync a commit is cheaper than the
 * hand-off between threads, so default durability commits on the event loop.
 */
export class PetWriterThread {
  readonly #worker: Worker
  readonly #pending: Pending[] = []
  #failure: Error | undefined

  /** A writer for a SQLite file store; undefined for PostgreSQL or an in-memory store (see `sqliteFileOf`). */
  static start (db: Db, options: WriterOptions, onFailure: (error: Error) => void): PetWriterThread | undefined {
    const path = sqliteFileOf(db)
    return path === undefined ? undefined : new PetWriterThread({ path, ...options }, onFailure)
  }

  private constructor (workerData: WriterWorkerData, onFailure: (error: Error) => void) {
    this.#worker = startWorker('pet-writer.worker', import.meta.url, workerData)
    this.#worker.unref() // an idle writer must not keep the process alive, unlike one with work
    this.#worker.on('message', (answer: WriterAnswer) => {
      const { resolve, reject } = this.#pending.shift()!
      if (this.#pending.length === 0) this.#worker.unref()
      if ('pets' in answer) resolve(answer.pets)
      else reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }))
    })
    this.#worker.on('error', (error) => {
      this.#fail(error)
      onFailure(error)
    })
    this.#worker.on('exit', () => this.#fail(new Error('The pet writer thread stopped')))
  }

  /** False once the thread has failed or stopped: the caller then commits on its own connection. */
  get running (): boolean {
    return this.#failure === undefined
  }

  /** Stores the pets in one transaction and resolves, with their ids, once it is committed. */
  insert (pets: PetValues[]): Promise<Pet[]> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ resolve, reject }) === 1) this.#worker.ref()
      this.#worker.postMessage(pets)
    })
  }

  /** Lets the thread finish the groups it was sent, close its connection and stop. */
  async close (): Promise<void> {
    if (this.#failure !== undefined) return
    await stopWorker(this.#worker, null)
  }

  #fail (error: Error): void {
    this.#failure ??= error
    // Whatever the thread had not answered may or may not be committed: each such request fails.
    for (const { reject } of this.#pending.splice(0)) reject(this.#failure)
  }
}
