import assert from 'node:assert/strict'
import { test } from 'node:test'
import { forEachStore } from '../helper.js'
import { listAllPets, printedKeys, runCli, startServerOnTerminal, type ServerProcess } from '../process.js'

async function listAll (server: ServerProcess, headers: Record<string, string>, limit: number): Promise<number[]> {
  return (await listAllPets(server.url, headers, limit)).map((pet) => pet.id)
}

forEachStore((store) => {
  test('two instances on one store act as one service', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    // Both start at once on an empty store: one applies the migrations, one makes the first key.
    const servers = await Promise.all([startServerOnTerminal(t, env), startServerOnTerminal(t, env)])
    const [a, b] = servers as [ServerProcess, ServerProcess]
    const firstKeys = servers.flatMap((server) => printedKeys(server.output()))
    assert.equal(firstKeys.length, 1, 'exactly one first key is printed')
    const headers = { authorization: `Bearer ${firstKeys[0]}`, 'content-type': 'application/json' }

    // Concurrent writes spread over both instances: every one acknowledged, ids unique.
    const created = await Promise.all(Array.from({ length: 60 }, async (_, i) => {
      const server = i % 2 === 0 ? a : b
      const response = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `Pet ${i}`, categoryId: i + 1 }) })
      assert.equal(response.status, 201)
      return await response.json() as { id: number }
    }))
    const ids = created.map((pet) => pet.id)
    assert.equal(new Set(ids).size, ids.length, 'ids are unique')

    // Read-your-write across instances.
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${a.url}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `Echo ${i}`, categoryId: 7 }) })
      const pet = await response.json() as { id: number }
      ids.push(pet.id)
      const seen = await fetch(`${b.url}/v1/pets/${pet.id}`, { headers })
      assert.equal(seen.status, 200)
      assert.deepEqual(await seen.json(), pet)
    }

    // Paging through either instance returns the same pets in the same order.
    const viaA = await listAll(a, headers, 7)
    const viaB = await listAll(b, headers, 7)
    assert.deepEqual(viaA, viaB)
    assert.deepEqual(viaA, [...ids].sort((x, y) => x - y))

    // A key made by the CLI works on both at once; revoked, both refuse it within 5 seconds.
    const made = await runCli(['keys', 'create', '--name', 'shared'], env)
    assert.equal(made.code, 0, made.stderr)
    const key = made.stdout.trimEnd().split('\n').at(-1)!
    const id = /Created API key (\d+)/.exec(made.stdout)![1]!
    for (const server of servers) assert.equal((await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status, 200)
    assert.equal((await runCli(['keys', 'revoke', id], env)).code, 0)
    const revokedAt = Date.now()
    for (const server of servers) {
      let status = 200
      while (status === 200 && Date.now() - revokedAt < 6000) {
        status = (await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.equal(status, 401)
    }
    assert.ok(Date.now() - revokedAt < 5000, `refused by both after ${Date.now() - revokedAt} ms`)
  })
})
