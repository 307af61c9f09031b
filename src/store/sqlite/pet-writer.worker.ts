// The writer thread's entry point (see PetWriterThread): commits each group of creates it is sent in
// one transaction on a connection of its own, and answers with the outcomes or the store's error.
import { parentPort, workerData } from 'node:worker_threads'
import type { PetCreate } from '../pet-store.js'
import type { WriterAnswer, WriterWorkerData } from './pet-writer-thread.js'
import { commitCreates } from './sqlite-pet-writes.js'
import { SqliteConnection } from './sqlite-connection.js'

const { path, durability, autocheckpointPages } = workerData as WriterWorkerData
const connection = new SqliteConnection(path, durability)
connection.setting(`wal_autocheckpoint = ${autocheckpointPages}`)
const port = parentPort!

port.on('message', (group: { creates: PetCreate[], createdAt: string } | null) => {
  if (group === null) {
    connection.close()
    port.close() // with the port closed, the thread ends
    return
  }
  let answer: WriterAnswer
  try {
    answer = { created: commitCreates(connection, group.creates, group.createdAt) }
  } catch (error) {
    const { code, message } = error as { code?: unknown, message?: unknown }
    answer = { error: { code: typeof code === 'string' ? code : undefined, message: String(message) } }
  }
  port.postMessage(answer)
})
