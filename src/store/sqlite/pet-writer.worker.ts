// The writer thread's entry point (see PetWriterThread): commits the groups of creates it is sent and
// answers each, in the order sent, with its outcomes or the store's error.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads'
import type { PetCreated } from '../pet-store.js'
import type { WriterAnswer, WriterWorkerData } from './pet-writer-thread.js'
import { commitCreateGroups, type CreateGroup } from './sqlite-pet-writes.js'
import { SqliteConnection } from './sqlite-connection.js'

const { path, durability, autocheckpointPages } = workerData as WriterWorkerData
const connection = new SqliteConnection(path, durability)
connection.setting(`wal_autocheckpoint = ${autocheckpointPages}`)
const port = parentPort!

/** A group to commit, or null: stop once the groups sent before it are answered. */
type Message = CreateGroup | null

port.on('message', (first: Message) => {
  // The groups sent while the last commit waited for its fsync are queued here by now: committed
  // together, they share the next one.
  const groups: CreateGroup[] = []
  let message = first
  while (message !== null) {
    groups.push(message)
    const queued = receiveMessageOnPort(port)
    if (queued === undefined) break
    message = queued.message as Message
  }
  for (const outcome of commitCreateGroups(connection, groups)) port.postMessage(answerOf(outcome))
  if (message === null) {
    connection.close()
    port.close() // with the port closed, the thread ends
  }
})

function answerOf (outcome: PetCreated[] | Error): WriterAnswer {
  if (!(outcome instanceof Error)) return { created: outcome }
  const { code } = outcome as { code?: unknown }
  return { error: { code: typeof code === 'string' ? code : undefined, message: outcome.message } }
}
