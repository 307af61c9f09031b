import assert from 'node:assert/strict'
import { test } from 'node:test'
import { join } from 'node:path'
import { forEachStore, tempDir } from '../helper.js'
import { listAllPets, startServer, type ListedPet, type ServerProcess } from '../process.js'
import { seededRandom, testSeed } from '../seeded-random.js'

const ROUNDS = 3
const WRITERS = 8

type Pet = ListedPet

async function listAll (server: ServerProcess, headers: Record<string, string>): Promise<Map<number, Pet>> {
  return new Map((await listAllPets(server.url, headers)).map((pet) => [pet.id, pet]))
}

forEachStore((store) => {
  test('every pet answered 201 survives kill -9 at a random moment; retried with their keys, unanswered ones exist exactly once', async (t) => {
    const seed = testSeed()
    t.diagnostic(`seed ${seed} (replay with TEST_SEED=${seed})`)
    const random = seededRandom(seed)
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const acknowledged: Pet[] = []
    const unanswered: Array<Omit<Pet, 'id'>> = []
    let headers: Record<string, string> | undefined
    let attempts = 0

    for (let round = 0; round < ROUNDS; round++) {
      const server = await startServer(t, env)
      headers ??= { authorization: `Bearer ${/^ps_\w+$/m.exec(server.output())![0]}`, 'content-type': 'application/json' }
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
      await new Promise((resolve) => setTimeout(resolve, 100 + random() * 400))
      await server.stop('SIGKILL')
      running = false
      await Promise.all(writers)
    }

    const server = await startServer(t, env)
    const stored = await listAll(server, headers!)
    t.diagnostic(`${attempts} requests tried, ${acknowledged.length} acknowledged, ${unanswered.length} unanswered, ${stored.size} stored`)
    assert.ok(acknowledged.length > 0, 'the writers got answers before each kill')
    const lost = acknowledged.filter((pet) => JSON.stringify(stored.get(pet.id)) !== JSON.stringify(pet))
    assert.deepEqual(lost, [], `${lost.length} acknowledged pets lost or changed`)

    // A client that lost its answer retries with the same key: the stored pet when it was
    // committed, a new one when it was not; never two.
    for (const sent of unanswered) {
      const response = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...headers!, 'idempotency-key': sent.name }, body: JSON.stringify(sent) })
      assert.equal(response.status, 201, sent.name)
    }
    const final = [...(await listAll(server, headers!)).values()]
    const perName = new Map<string, number>()
    for (const pet of final) perName.set(pet.name, (perName.get(pet.name) ?? 0) + 1)
    for (const sent of [...acknowledged, ...unanswered]) assert.equal(perName.get(sent.name), 1, `exactly one pet for key ${sent.name}`)
  })
})

for (const durability of ['default', 'strict']) {
  test(`DURABILITY=${durability}: every pet answered 201 by a group commit survives kill -9 at a random moment`, async (t) => {
    const seed = testSeed()
    t.diagnostic(`seed ${seed} (replay with TEST_SEED=${seed})`)
    const random = seededRandom(seed)
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, DURABILITY: durability }
    const server = await startServer(t, env)
    const headers = { authorization: `Bearer ${/^ps_\w+$/m.exec(server.output())![0]}`, 'content-type': 'application/json' }
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
  })
}
