// The writer thread's entry point (see PetWriterThread): commits the groups of creates it is sent and
// answers each, in the order sent, with its outcomes or the store's error.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads'
import type { PetCreated } from '../pet-store.js'
import { isStoreUnavailable } from '../store-errors.js'
import type { WriterAnswer, WriterMessage, WriterWorkerData } from './pet-writer-thread.js'
import { commitCreateGroups, type CreateGroup } from './sqlite-pet-writes.js'
import { SqliteConnection } from './sqlite-connection.js'
import { decodeGroup, encodeOutcomes } from './writer-wire.js'

const { path, durability, autocheckpointPages } = workerData as WriterWorkerData
const connection = new SqliteConnection(path, durability)
connection.setting(`wal_autocheckpoint = ${autocheckpointPages}`)
const port = parentPort!

port.on('message', (first: WriterMessage) => {
  // The groups sent while the last commit waited for its fsync are queued here by now: committed
  // together, they share the next one.
  const sent = first === null ? { groups: [], stop: true } : takeQueued([decodeGroup(first)])
  const outcomes = commitCreateGroups(connection, sent.groups)
  for (const outcome of outcomes) port.postMessage(answerOf(outcome))
  let { stop } = sent
  // The groups sent meanwhile fail with a store fault at once: committed, each would wait for it again.
  const storeFault = outcomes.find((outcome) => outcome instanceof Error && isStoreUnavailable(outcome))
  if (storeFault !== undefined && !stop) {
    const failing = takeQueued([])
    const answer = answerOf(storeFault)
    for (let i = 0; i < failing.groups.length; i++) port.postMessage(answer)
    stop = failing.stop
  }
  if (stop) {
    connection.close()
    port.close() // with the port closed, the thread ends
  }
})

/** `groups` and the groups queued on the port after them, up to the stop message if it came. */
function takeQueued (groups: CreateGroup[]): { groups: CreateGroup[], stop: boolean } {
  for (let queued = receiveMessageOnPort(port); queued !== undefined; queued = receiveMessageOnPort(port)) {
    const message = queued.message as WriterMessage
    if (message === null) return { groups, stop: true }
    groups.push(decodeGroup(message))
  }
  return { groups, stop: false }
}

function answerOf (outcome: PetCreated[] | Error): WriterAnswer {
  if (!(outcome instanceof Error)) return { outcomes: encodeOutcomes(outcome) }
  const { code } = outcome as { code?: unknown }
  return { error: { code: typeof code === 'string' ? code : undefined, message: outcome.message } }
}
