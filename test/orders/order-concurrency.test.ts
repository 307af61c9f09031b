import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import type { Db } from '../../src/db/database.js'
import { checkAnswers, createKey, createTestStore, defer, forEachStore, openTestStore, TEST_LIMITS, type TestStore } from '../helper.js'

const TERMINAL_PET_STATUS = { placed: 'pending', approved: 'pending', delivered: 'sold', cancelled: 'available' } as const

interface Instances {
  /** One URL per instance; requests are spread over them. */
  urls: string[]
  headers: Record<string, string>
  db: Db
}

/**
 * The service listening on real sockets: on PostgreSQL two instances with pools of their own on one
 * database, as in production; on SQLite one (its instances are processes, tested in the CLI suites).
 */
async function startInstances (t: TestContext, store: TestStore): Promise<Instances> {
  const { store: first, db, databaseUrl } = await createTestStore(t, store)
  const config = loadConfig({ DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: '8', RATE_LIMIT_PER_MINUTE: '0' })
  const urls = []
  for (let i = 0; i < (store.name === 'postgres' ? 2 : 1); i++) {
    const app = await buildApp({ config, store: i === 0 ? first : openTestStore(t, databaseUrl, { poolSize: 8 }), limits: TEST_LIMITS })
    defer(t, () => app.close())
    checkAnswers(t, app)
    urls.push(`${await app.listen({ port: 0, host: '127.0.0.1' })}/v1`)
  }
  const { key } = await createKey(db)
  return { urls, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, db }
}

async function send (instances: Instances, i: number, method: string, path: string, body?: unknown): Promise<{ status: number, body: any }> {
  const url = instances.urls[i % instances.urls.length]! + path
  const response = await fetch(url, { method, headers: instances.headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: response.status, body: await response.json() }
}

async function liveOrders (db: Db, petId: number): Promise<number> {
  const rows = await db.selectFrom('orders').select('id').where('pet_id', '=', BigInt(petId)).where('status', 'in', ['placed', 'approved']).execute()
  return rows.length
}

forEachStore((store) => {
  test('concurrent orders for one pet: exactly one 201, the others 409, and one live order', async (t) => {
    const instances = await startInstances(t, store)
    const PETS = 8
    const ORDERS_PER_PET = 12
    const pets = []
    for (let i = 0; i < PETS; i++) pets.push((await send(instances, i, 'POST', '/pets', { name: `Pet ${i}`, categoryId: 1 })).body)

    const attempts = pets.flatMap((pet) => Array.from({ length: ORDERS_PER_PET }, () => pet.id as number))
    const results = await Promise.all(attempts.map((petId, i) => send(instances, i, 'POST', '/store/orders', { petId })))

    for (const pet of pets) {
      const mine = results.filter((_result, i) => attempts[i] === pet.id)
      assert.deepEqual(mine.map((result) => result.status).sort(), [201, ...Array(ORDERS_PER_PET - 1).fill(409)], `pet ${pet.id}`)
      for (const refused of mine.filter((result) => result.status === 409)) assert.equal(refused.body.code, 'pet_not_available')
      assert.equal((await send(instances, 0, 'GET', `/pets/${pet.id}`)).body.status, 'pending')
      assert.equal(await liveOrders(instances.db, pet.id), 1)
    }
  })

  test('concurrent moves of one order: each applied at most once, and the order ends in a reachable state', async (t) => {
    const instances = await startInstances(t, store)
    const ROUNDS = 6
    const MOVES = ['approved', 'delivered', 'cancelled', 'placed'] as const
    for (let round = 0; round < ROUNDS; round++) {
      const pet = (await send(instances, round, 'POST', '/pets', { name: `Pet ${round}`, categoryId: 1 })).body
      const order = (await send(instances, round, 'POST', '/store/orders', { petId: pet.id })).body
      // Five requests for each move, shuffled by round, at once.
      const moves = Array.from({ length: 20 }, (_, i) => MOVES[(i + round) % MOVES.length]!)
      const results = await Promise.all(moves.map((status, i) => send(instances, i, 'PATCH', `/store/orders/${order.id}`, { status })))

      const applied = moves.filter((_move, i) => results[i]!.status === 200)
      for (const [i, result] of results.entries()) {
        assert.ok(result.status === 200 || (result.status === 409 && result.body.code === 'invalid_transition'), `${moves[i]}: ${result.status}`)
      }
      for (const status of MOVES) assert.ok(applied.filter((move) => move === status).length <= 1, `${status} applied at most once`)
      assert.ok(!applied.includes('placed'))
      // What was applied is a path of allowed moves from placed, in some order.
      const final = (await send(instances, 0, 'GET', `/store/orders/${order.id}`)).body.status
      const path = new Set(applied)
      if (path.has('delivered')) assert.ok(path.has('approved') && !path.has('cancelled'))
      if (path.has('cancelled')) assert.ok(!path.has('delivered'))
      const expectedFinal = path.has('delivered') ? 'delivered' : path.has('cancelled') ? 'cancelled' : path.has('approved') ? 'approved' : 'placed'
      assert.equal(final, expectedFinal)
      assert.equal((await send(instances, 0, 'GET', `/pets/${pet.id}`)).body.status, TERMINAL_PET_STATUS[final as keyof typeof TERMINAL_PET_STATUS])
      assert.equal(await liveOrders(instances.db, pet.id), final === 'placed' || final === 'approved' ? 1 : 0)
    }
  })

  test('orders and cancellations racing on one pet never leave it with two live orders', async (t) => {
    const instances = await startInstances(t, store)
    const pet = (await send(instances, 0, 'POST', '/pets', { name: 'Rex', categoryId: 1 })).body
    let order = (await send(instances, 0, 'POST', '/store/orders', { petId: pet.id })).body
    for (let round = 0; round < 5; round++) {
      const [cancel, ...orders] = await Promise.all([
        send(instances, round, 'PATCH', `/store/orders/${order.id}`, { status: 'cancelled' }),
        ...Array.from({ length: 6 }, (_, i) => send(instances, i, 'POST', '/store/orders', { petId: pet.id }))
      ])
      assert.equal(cancel!.status, 200)
      const placed = orders.filter((result) => result.status === 201)
      assert.ok(placed.length <= 1, 'at most one new order')
      for (const result of orders) assert.ok(result.status === 201 || result.body.code === 'pet_not_available')
      assert.equal(await liveOrders(instances.db, pet.id), placed.length)
      const petNow = (await send(instances, 0, 'GET', `/pets/${pet.id}`)).body.status
      assert.equal(petNow, placed.length === 1 ? 'pending' : 'available')
      order = placed[0]?.body ?? (await send(instances, 0, 'POST', '/store/orders', { petId: pet.id })).body
    }
  })
})
