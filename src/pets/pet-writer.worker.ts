// The writer thread's entry point (see PetWriterThread): stores each group of pets it is sent in one
// transaction on a connection of its own, and answers with the stored pets or the store's error.
import { parentPort, workerData } from 'node:worker_threads'
import { createDb } from '../db/create-db.js'
import { setAutocheckpoint } from '../db/wal-checkpointer.js'
import { insertPetsNow, type PetValues } from './pet.repository.js'
import type { WriterAnswer, WriterWorkerData } from './pet-writer-thread.js'

const { path, durability, autocheckpointPages } = workerData as WriterWorkerData
const db = createDb(`sqlite:${path}`, 1, durability)
if (autocheckpointPages !== undefined) await setAutocheckpoint(db, autocheckpointPages)
const port = parentPort!

port.on('message', (pets: PetValues[] | null) => {
  if (pets === null) {
    void db.destroy().finally(() => port.close()) // with the port closed, the thread ends
    return
  }
  let answer: WriterAnswer
  try {
    // Never undefined here: the connection is this thread's own and no transaction is left open on it.
    answer = { pets: insertPetsNow(db, pets)! }
  } catch (error) {
    const { code, message } = error as { code?: unknown, message?: unknown }
    answer = { error: { code: typeof code === 'string' ? code : undefined, message: String(message) } }
  }
  port.postMessage(answer)
})
