import type { Worker } from 'node:worker_threads'
import type { PetCreate, PetCreated } from '../pet-store.js'
import type { Durability } from '../store.js'
import { startWorker, stopWorker } from './worker-thread.js'
import { decodeOutcomes, encodeGroup, type GroupOnWire, type OutcomesOnWire } from './writer-wire.js'

/** What the writer thread is sent: a group to commit, or null to stop once the groups sent before it are answered. */
export type WriterMessage = GroupOnWire | null

/** What the writer thread answers for each group, in the order sent: its outcomes, or the store's error. */
export type WriterAnswer = { outcomes: OutcomesOnWire } | { error: { code: string | undefined, message: string } }

export interface WriterWorkerData {
  path: string
  durability: Durability
  /** The writer's `wal_autocheckpoint` (see WalCheckpointer). */
  autocheckpointPages: number
}

interface Pending {
  creates: readonly PetCreate[]
  resolve: (created: PetCreated[]) => void
  reject: (error: unknown) => void
}

/**
 * Commits groups of creates on a thread of its own, with its own connection to the SQLite file. Under
 * DURABILITY=strict each commit waits for an fsync (a quarter to half a millisecond here); on the
 * event loop that wait stopped every request, while on this thread the loop keeps serving and
 * sending the next groups, which the thread then commits together. SQLite publishes a commit to other
 * connections only after its fsync, so readers still see a pet only once it is durable. Without the
 * fsync a commit is cheaper than the hand-off between threads, so default durability commits on the
 * event loop.
 */
export class PetWriterThread {
  readonly #worker: Worker
  readonly #pending: Pending[] = []
  #failure: Error | undefined
  #closing = false

  constructor (workerData: WriterWorkerData, onFailure: (error: Error) => void) {
    this.#worker = startWorker('pet-writer.worker', import.meta.url, workerData)
    this.#worker.unref() // an idle writer must not keep the process alive, unlike one with work
    this.#worker.on('message', (answer: WriterAnswer) => {
      const pending = this.#pending.shift()
      if (pending === undefined) return // failed already (see #fail), with the thread's other answers
      const { creates, resolve, reject } = pending
      // Closing, it stays referenced until it has ended (see close).
      if (this.#pending.length === 0 && !this.#closing) this.#worker.unref()
      if ('outcomes' in answer) resolve(decodeOutcomes(creates, answer.outcomes))
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

  /** Commits the creates in one transaction and resolves with their outcomes once it is committed. */
  commit (creates: readonly PetCreate[], createdAt: string): Promise<PetCreated[]> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ creates, resolve, reject }) === 1) this.#worker.ref()
      this.#worker.postMessage(encodeGroup({ creates, createdAt }) satisfies WriterMessage)
    })
  }

  /** Lets the thread finish the groups it was sent, close its connection and stop. */
  async close (): Promise<void> {
    if (this.#failure !== undefined) return
    this.#closing = true
    await stopWorker(this.#worker, null satisfies WriterMessage)
  }

  #fail (error: Error): void {
    this.#failure ??= error
    // Whatever the thread had not answered may or may not be committed: each such request fails.
    for (const { reject } of this.#pending.splice(0)) reject(this.#failure)
  }
}
