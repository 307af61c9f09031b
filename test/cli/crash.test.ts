import assert from 'node:assert/strict'
import { test } from 'node:test'
import { join } from 'node:path'
import { forEachStore, tempDir } from '../helper.js'
import { createKey, listAllEvents, listAllOrders, listAllPets, startServer, type ListedPet, type ServerProcess } from '../process.js'
import { seededRandom, testSeed } from '../seeded-random.js'

const ROUNDS = 3
const WRITERS = 8
const MOVERS = 4

type Pet = ListedPet

async function listAll (server: ServerProcess, headers: Record<string, string>): Promise<Map<number, Pet>> {
  return new Map((await listAllPets(server.url, headers)).map((pet) => [pet.id, pet]))
}

/** Every stored pet has its one `pet.created` event, with the pet as data, and every such event its pet. */
async function assertEventPerPet (server: ServerProcess, headers: Record<string, string>, stored: Map<number, Pet>): Promise<void> {
  const created = (await listAllEvents(server.url, headers)).filter((event) => event.type === 'pet.created').map((event) => event.data as Pet)
  assert.deepEqual(created.sort((a, b) => a.id - b.id), [...stored.values()])
}

forEachStore((store) => {
  test('every pet answered 201 survives kill -9 at a random moment amid order moves; retried with their keys, unanswered ones exist exactly once; the event log replays to what is stored', async (t) => {
    const seed = testSeed()
    t.diagnostic(`seed ${seed} (replay with TEST_SEED=${seed})`)
    const random = seededRandom(seed)
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const headers = { authorization: `Bearer ${await createKey(env)}`, 'content-type': 'application/json' }
    const acknowledged: Pet[] = []
    const unanswered: Array<Omit<Pet, 'id'>> = []
    let attempts = 0
    let moves = 0

    for (let round = 0; round < ROUNDS; round++) {
      const server = await startServer(t, env)
      let running = true
      const writers = Array.from({ length: WRITERS }, async (_, writer) => {
        for (let i = 0; running; i++) {
          attempts++
          const sent = { name: `r${round} w${writer} #${i}`, categoryId: 2 ** 53 + round * 1000 + writer, status: 'pending' }
          try {
            // The name doubles as the idempotency key: unique per request.
            const response = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...headers, 'idempotency-key': sent.name }, body: JSON.stringify(sent) })
            if (response.status === 201) acknowledged.push(await response.json() as Pet)
            else unanswered.push(sent)
          } catch {
            unanswered.push(sent)
            return // the server is gone
          }
        }
      })
      // Beside them, pets ordered and their orders moved on: order events and the pets' status changes.
      const movers = Array.from({ length: MOVERS }, async (_, mover) => {
        const send = async (path: string, body: object, method = 'POST') => await (await fetch(`${server.url}/v1${path}`, { method, headers, body: JSON.stringify(body) })).json() as { id: number }
        try {
          for (let i = 0; running; i++) {
            const pet = await send('/pets', { name: `r${round} m${mover} #${i}`, categoryId: 1 })
            const order = await send('/store/orders', { petId: pet.id })
            for (const status of i % 2 === 0 ? ['approved', 'delivered'] : ['cancelled']) {
              await send(`/store/orders/${order.id}`, { status }, 'PATCH')
              moves++
            }
          }
        } catch {
          // the server is gone
        }
      })
      // The kill comes at a random moment once the round has moved an order (on a slow machine a
      // fixed wait could end before the first move), so every round kills amid moves.
      const movesBefore = moves
      const started = performance.now()
      while (moves === movesBefore && performance.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 10))
      await new Promise((resolve) => setTimeout(resolve, 100 + random() * 400))
      await server.stop('SIGKILL')
      running = false
      await Promise.all([...writers, ...movers])
    }

    const server = await startServer(t, env)
    const stored = await listAll(server, headers)
    t.diagnostic(`${attempts} requests tried, ${acknowledged.length} acknowledged, ${unanswered.length} unanswered, ${stored.size} stored`)
    assert.ok(acknowledged.length > 0, 'the writers got answers before each kill')
    const lost = acknowledged.filter((pet) => JSON.stringify(stored.get(pet.id)) !== JSON.stringify(pet))
    assert.deepEqual(lost, [], `${lost.length} acknowledged pets lost or changed`)

    // A client that lost its answer retries with the same key: the stored pet when it was
    // committed, a new one when it was not; never two.
    for (const sent of unanswered) {
      const response = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...headers, 'idempotency-key': sent.name }, body: JSON.stringify(sent) })
      assert.equal(response.status, 201, sent.name)
    }
    const final = await listAllPets(server.url, headers)
    const perName = new Map<string, number>()
    for (const pet of final) perName.set(pet.name, (perName.get(pet.name) ?? 0) + 1)
    for (const sent of [...acknowledged, ...unanswered]) assert.equal(perName.get(sent.name), 1, `exactly one pet for key ${sent.name}`)

    // Every change has its event and every event its change: the last event of each resource holds it as stored.
    const events = await listAllEvents(server.url, headers)
    t.diagnostic(`${events.length} events, ${moves} order moves acknowledged`)
    assert.ok(moves > 0, 'orders were moved before the kills')
    const created = events.filter((event) => event.type === 'pet.created').map((event) => (event.data as Pet).id)
    assert.equal(new Set(created).size, created.length, 'one pet.created a pet')
    const latest = { pet: new Map<number, { id: number }>(), order: new Map<number, { id: number }>() }
    for (const { type, data } of events) {
      const resource = { ...data as { id: number, previousStatus?: string } }
      delete resource.previousStatus
      latest[type.startsWith('pet.') ? 'pet' : 'order'].set(resource.id, resource)
    }
    const inIdOrder = (resources: Map<number, { id: number }>) => [...resources.values()].sort((a, b) => a.id - b.id)
    assert.deepEqual(inIdOrder(latest.pet), final, 'the pets the events describe are the pets stored')
    assert.deepEqual(inIdOrder(latest.order), await listAllOrders(server.url, headers), 'the orders the events describe are the orders stored')
  })
})

for (const durability of ['default', 'strict']) {
  test(`DURABILITY=${durability}: every pet answered 201 by a group commit survives kill -9 at a random moment`, async (t) => {
    const seed = testSeed()
    t.diagnostic(`seed ${seed} (replay with TEST_SEED=${seed})`)
    const random = seededRandom(seed)
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, DURABILITY: durability }
    const headers = { authorization: `Bearer ${await createKey(env)}`, 'content-type': 'application/json' }
    const server = await startServer(t, env)
    const acknowledged: Pet[] = []
    let running = true
    const writers = Array.from({ length: WRITERS }, async (_, writer) => {
      for (let i = 0; running; i++) {
        try {
          const response = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `w${writer} #${i}`, categoryId: 2 ** 53 + writer }) })
          if (response.status === 201) acknowledged.push(await response.json() as Pet)
        } catch {
          return // the server is gone
        }
      }
    })
    // From the first answer on (under tsx, the writer thread takes a while to load its sources).
    while (acknowledged.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    await new Promise((resolve) => setTimeout(resolve, 100 + random() * 400))
    await server.stop('SIGKILL')
    running = false
    await Promise.all(writers)

    const restarted = await startServer(t, env)
    const stored = await listAll(restarted, headers)
    t.diagnostic(`${acknowledged.length} acknowledged, ${stored.size} stored`)
    assert.ok(acknowledged.length > 0, 'the writers got answers before the kill')
    const lost = acknowledged.filter((pet) => JSON.stringify(stored.get(pet.id)) !== JSON.stringify(pet))
    assert.deepEqual(lost, [], `${lost.length} acknowledged pets lost or changed`)
    await assertEventPerPet(restarted, headers, stored)
  })
}
