import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { OrderStatus, PetStatus } from '../../src/client/index.js'
import { build, clientFor, createPet, errorOf, forEachStore, type TestApp } from '../helper.js'

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

forEachStore((store) => {
  async function petStatus (testApp: TestApp, petId: number): Promise<PetStatus> {
    const { data } = await (await clientFor(testApp)).GET('/pets/{petId}', { params: { path: { petId } } })
    return data!.status
  }

  async function placeOrder (testApp: TestApp, petId: number) {
    const { data, response } = await (await clientFor(testApp)).POST('/store/orders', { body: { petId } })
    assert.equal(response.status, 201)
    return data!
  }

  async function moveOrder (testApp: TestApp, orderId: number, status: OrderStatus) {
    return await testApp.app.inject({ method: 'PATCH', url: `/v1/store/orders/${orderId}`, headers: testApp.auth, payload: { status } })
  }

  test('createOrder places the order and makes the pet pending', async (t) => {
    const testApp = await build(t, { store })
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const client = await clientFor(testApp)
    const { data: order, response } = await client.POST('/store/orders', { body: { petId: pet.id } })
    assert.equal(response.status, 201)
    assert.deepEqual(order, { id: order!.id, petId: pet.id, status: 'placed', createdAt: order!.createdAt, updatedAt: order!.createdAt })
    assert.match(order!.createdAt, RFC3339_UTC)
    assert.equal(response.headers.get('location'), `/v1/store/orders/${order!.id}`)
    assert.equal(await petStatus(testApp, pet.id), 'pending')

    const { data: fetched } = await client.GET('/store/orders/{orderId}', { params: { path: { orderId: order!.id } } })
    assert.deepEqual(fetched, order)
  })

  test('createOrder answers 422 for an unknown pet and 409 for a pet that is not available', async (t) => {
    const testApp = await build(t, { store })
    const unknown = await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: testApp.auth, payload: { petId: 999 } })
    assert.equal(unknown.statusCode, 422)
    assert.deepEqual(errorOf(unknown), { code: 'pet_not_found', message: 'No pet with id 999', status: 422 })

    for (const status of ['pending', 'sold'] as const) {
      const pet = await createPet(testApp, { name: 'Tom', categoryId: 1, status })
      const taken = await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: testApp.auth, payload: { petId: pet.id } })
      assert.equal(taken.statusCode, 409)
      assert.equal(errorOf(taken).code, 'pet_not_available')
      assert.equal(await petStatus(testApp, pet.id), status, 'unchanged')
    }
    const list = await testApp.app.inject({ url: '/v1/store/orders', headers: testApp.auth })
    assert.deepEqual(list.json(), [], 'no order was stored')
  })

  test('createOrder with an Idempotency-Key places one order however often it is retried, and refuses the key for another body', async (t) => {
    const testApp = await build(t, { store })
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const order = (petId: number, key: string) =>
      testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: { ...testApp.auth, 'idempotency-key': key }, payload: { petId } })
    const first = await order(pet.id, 'order-1')
    assert.equal(first.statusCode, 201, first.body)
    assert.equal(first.headers['idempotent-replayed'], undefined)
    // The retry of an order placed gets its answer, not a 409 for the pet it made pending.
    const retry = await order(pet.id, 'order-1')
    assert.equal(retry.statusCode, 201, retry.body)
    assert.equal(retry.headers['idempotent-replayed'], 'true')
    assert.equal(retry.body, first.body)
    assert.equal(retry.headers.location, first.headers.location)
    assert.equal(retry.headers.location, `/v1/store/orders/${first.json().id}`)
    // Retries of an order answered all get its answer, however many at once.
    for (const answer of await Promise.all(Array.from({ length: 6 }, () => order(pet.id, 'order-1')))) {
      assert.equal(answer.statusCode, 201, answer.body)
      assert.equal(answer.headers['idempotent-replayed'], 'true')
      assert.equal(answer.body, first.body)
    }
    // Sent at once with a new key: one order placed; the others wait for it (SQLite) or are told it is under way.
    const tom = await createPet(testApp, { name: 'Tom', categoryId: 3 })
    const racing = await Promise.all(Array.from({ length: 6 }, () => order(tom.id, 'order-race')))
    const placedOnce = racing.filter((answer) => answer.statusCode === 201 && answer.headers['idempotent-replayed'] === undefined)
    assert.equal(placedOnce.length, 1, racing.map((answer) => answer.body).join('\n'))
    for (const answer of racing) {
      if (answer.statusCode === 201) assert.equal(answer.body, placedOnce[0]!.body)
      else assert.equal(errorOf(answer).code, 'idempotency_key_in_use', answer.body)
    }
    assert.equal((await moveOrder(testApp, placedOnce[0]!.json().id, 'cancelled')).statusCode, 200)

    const other = await order(pet.id + 1, 'order-1')
    assert.equal(other.statusCode, 422)
    assert.equal(errorOf(other).code, 'idempotency_key_reused')
    const asPet = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'idempotency-key': 'order-1' }, payload: { name: 'Rex', categoryId: 3 } })
    assert.equal(asPet.statusCode, 422)
    assert.equal(errorOf(asPet).message, 'This Idempotency-Key was used for another operation, a create at /v1/store/orders: use a new key')

    // A refusal is not kept: once the pet is free again, the same key places an order.
    const taken = await order(pet.id, 'order-2')
    assert.equal(taken.statusCode, 409)
    assert.equal(errorOf(taken).code, 'pet_not_available')
    assert.equal((await moveOrder(testApp, first.json().id, 'cancelled')).statusCode, 200)
    const placed = await order(pet.id, 'order-2')
    assert.equal(placed.statusCode, 201, placed.body)
    assert.equal(placed.headers['idempotent-replayed'], undefined)

    const orders = (await testApp.app.inject({ url: '/v1/store/orders', headers: testApp.auth })).json() as Array<{ id: number, status: string }>
    const raced = placedOnce[0]!.json().id
    assert.deepEqual(orders.map(({ id, status }) => ({ id, status })), [
      { id: first.json().id, status: 'cancelled' }, { id: raced, status: 'cancelled' }, { id: placed.json().id, status: 'placed' }
    ])
    const events = (await testApp.app.inject({ url: '/v1/events?type=order.placed', headers: testApp.auth })).json() as Array<{ data: { id: number } }>
    assert.deepEqual(events.map(({ data }) => data.id), [first.json().id, raced, placed.json().id], 'one order.placed event per order placed')
  })

  test('bad order bodies are 400 as for pets, and change nothing', async (t) => {
    const testApp = await build(t, { store })
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const bodies = [{}, { petId: String(pet.id) }, { petId: pet.id, extra: 1 }, { petId: 0 }, { petId: 1.5 }, { petId: '9223372036854775808' }, []]
    for (const payload of bodies) {
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: testApp.auth, payload })
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
      assert.equal(errorOf(response).code, 'validation_failed')
    }
    const notJson = await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: { ...testApp.auth, 'content-type': 'text/plain' }, payload: 'petId=1' })
    assert.equal(notJson.statusCode, 415)
    const badJson = await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: { ...testApp.auth, 'content-type': 'application/json' }, payload: '{"petId":' })
    assert.equal(errorOf(badJson).code, 'invalid_json')
    assert.equal(await petStatus(testApp, pet.id), 'available')
  })

  test('every transition: the allowed ones move the order and its pet, the others are 409 and change nothing', async (t) => {
    const testApp = await build(t, { store })
    // How to reach each status from a new order, and the pet's status there.
    const paths: Record<OrderStatus, OrderStatus[]> = {
      placed: [],
      approved: ['approved'],
      delivered: ['approved', 'delivered'],
      cancelled: ['cancelled']
    }
    const petStatusIn: Record<OrderStatus, PetStatus> = { placed: 'pending', approved: 'pending', delivered: 'sold', cancelled: 'available' }
    const allowed = new Set(['placed>approved', 'approved>delivered', 'placed>cancelled', 'approved>cancelled'])

    for (const from of Object.keys(paths) as OrderStatus[]) {
      for (const to of Object.keys(paths) as OrderStatus[]) {
        const pet = await createPet(testApp, { name: `${from} to ${to}`, categoryId: 1 })
        const order = await placeOrder(testApp, pet.id)
        for (const step of paths[from]) assert.equal((await moveOrder(testApp, order.id, step)).statusCode, 200)

        const response = await moveOrder(testApp, order.id, to)
        const move = `${from}>${to}`
        if (allowed.has(move)) {
          assert.equal(response.statusCode, 200, move)
          const moved = response.json()
          assert.deepEqual({ ...moved, updatedAt: undefined }, { ...order, status: to, updatedAt: undefined }, move)
          assert.ok(moved.updatedAt >= order.createdAt)
          assert.equal(await petStatus(testApp, pet.id), petStatusIn[to], move)
        } else {
          assert.equal(response.statusCode, 409, move)
          assert.deepEqual(errorOf(response), { code: 'invalid_transition', message: `Order ${order.id} cannot move from ${from} to ${to}`, status: 409 })
          const unchanged = await testApp.app.inject({ url: `/v1/store/orders/${order.id}`, headers: testApp.auth })
          assert.equal(unchanged.json().status, from, move)
          assert.equal(await petStatus(testApp, pet.id), petStatusIn[from], move)
        }
      }
    }
  })

  test('a cancelled order frees the pet for a new order; a delivered one sells it for good', async (t) => {
    const testApp = await build(t, { store })
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const first = await placeOrder(testApp, pet.id)
    assert.equal((await moveOrder(testApp, first.id, 'cancelled')).statusCode, 200)
    const second = await placeOrder(testApp, pet.id)
    assert.ok(second.id > first.id)
    assert.equal((await moveOrder(testApp, second.id, 'approved')).statusCode, 200)
    assert.equal((await moveOrder(testApp, second.id, 'delivered')).statusCode, 200)
    assert.equal(await petStatus(testApp, pet.id), 'sold')
    const again = await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: testApp.auth, payload: { petId: pet.id } })
    assert.equal(errorOf(again).code, 'pet_not_available')
  })

  test('listOrders pages in ascending id order with Link rel="next" and filters by status', async (t) => {
    const testApp = await build(t, { store })
    const orders = []
    for (let i = 0; i < 5; i++) orders.push(await placeOrder(testApp, (await createPet(testApp, { name: `Pet ${i}`, categoryId: 1 })).id))
    for (const order of orders.slice(0, 3)) assert.equal((await moveOrder(testApp, order.id, 'approved')).statusCode, 200)

    const client = await clientFor(testApp)
    const seen = []
    let cursor: string | undefined
    do {
      const { data, response } = await client.GET('/store/orders', { params: { query: { status: 'approved', limit: 2, ...(cursor === undefined ? {} : { cursor }) } } })
      assert.equal(response.status, 200)
      seen.push(...data!.map((order) => order.id))
      const link = response.headers.get('link')
      if (link !== null) assert.match(link, /^<\/v1\/store\/orders\?limit=2&status=approved&cursor=[\w-]+>; rel="next"$/)
      cursor = link === null ? undefined : new URL(link.slice(1, link.indexOf('>')), 'http://x').searchParams.get('cursor')!
    } while (cursor !== undefined)
    assert.deepEqual(seen, orders.slice(0, 3).map((order) => order.id))

    const all = await client.GET('/store/orders')
    assert.deepEqual(all.data!.map((order) => order.id), orders.map((order) => order.id))
    assert.equal(all.response.headers.get('link'), null)
  })

  test('listOrders refuses a bad limit, status or cursor, and a cursor made for pets', async (t) => {
    const testApp = await build(t, { store })
    for (let i = 0; i < 3; i++) await createPet(testApp, { name: `Pet ${i}`, categoryId: 1 })
    const petsPage = await testApp.app.inject({ url: '/v1/pets?limit=1', headers: testApp.auth })
    const petCursor = new URL(String(petsPage.headers.link).slice(1, String(petsPage.headers.link).indexOf('>')), 'http://x').searchParams.get('cursor')!
    for (const query of ['limit=0', 'limit=101', 'status=available', 'cursor=abc', `cursor=${petCursor}`, 'petId=1']) {
      const response = await testApp.app.inject({ url: `/v1/store/orders?${query}`, headers: testApp.auth })
      assert.equal(response.statusCode, 400, query)
      assert.equal(errorOf(response).code, 'validation_failed')
    }
  })

  test('getOrder and updateOrderStatus answer 404 for an unknown order, 400 for a bad id or body', async (t) => {
    const testApp = await build(t, { store })
    const missing = await testApp.app.inject({ url: '/v1/store/orders/999', headers: testApp.auth })
    assert.deepEqual(errorOf(missing), { code: 'not_found', message: 'No order with id 999', status: 404 })
    const moveMissing = await moveOrder(testApp, 999, 'approved')
    assert.deepEqual(errorOf(moveMissing), { code: 'not_found', message: 'No order with id 999', status: 404 })
    for (const url of ['/v1/store/orders/abc', '/v1/store/orders/0', '/v1/store/orders/9223372036854775808']) {
      assert.equal((await testApp.app.inject({ url, headers: testApp.auth })).statusCode, 400, url)
    }
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const order = await placeOrder(testApp, pet.id)
    for (const payload of [{}, { status: 'shipped' }, { status: 'approved', petId: 1 }, { status: null }]) {
      const response = await testApp.app.inject({ method: 'PATCH', url: `/v1/store/orders/${order.id}`, headers: testApp.auth, payload })
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
      assert.equal(errorOf(response).code, 'validation_failed')
    }
    const deleted = await testApp.app.inject({ method: 'DELETE', url: `/v1/store/orders/${order.id}`, headers: testApp.auth })
    assert.equal(deleted.statusCode, 405)
    assert.equal(deleted.headers.allow, 'GET, HEAD, PATCH')
  })

  test('orders need a key like the rest of /v1', async (t) => {
    const testApp = await build(t, { store })
    for (const [method, url] of [['GET', '/v1/store/orders'], ['POST', '/v1/store/orders'], ['GET', '/v1/store/orders/1'], ['PATCH', '/v1/store/orders/1']] as const) {
      const response = await testApp.app.inject({ method, url, payload: method === 'GET' ? undefined : {} })
      assert.equal(response.statusCode, 401, `${method} ${url}`)
      assert.equal(errorOf(response).code, 'unauthorized')
    }
  })
})

test('the OpenAPI document marks every order operation experimental', async (t) => {
  const testApp = await build(t)
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
  const operations = [doc.paths['/store/orders'].post, doc.paths['/store/orders'].get, doc.paths['/store/orders/{orderId}'].get, doc.paths['/store/orders/{orderId}'].patch]
  assert.deepEqual(operations.map((operation) => operation.operationId), ['createOrder', 'listOrders', 'getOrder', 'updateOrderStatus'])
  for (const operation of operations) {
    assert.equal(operation['x-stability'], 'experimental')
    assert.match(operation.summary, /\(experimental\)$/)
  }
  assert.equal(doc.paths['/pets'].get['x-stability'], undefined)
  assert.deepEqual(Object.keys(doc.paths['/store/orders'].post.responses).sort(), ['201', '400', '401', '403', '405', '408', '409', '413', '415', '417', '422', '429', '431', '500', '501', '503'])
  assert.equal(doc.paths['/store/orders'].post.responses['422'].content['application/json'].example.code, 'pet_not_found')
  assert.equal(doc.paths['/store/orders/{orderId}'].patch.responses['409'].content['application/json'].example.code, 'invalid_transition')
})

test('every answer of an order operation says API-Stability: experimental, errors and HEAD included; stable operations say nothing', async (t) => {
  const testApp = await build(t)
  const answers = [
    await testApp.app.inject({ url: '/v1/store/orders', headers: testApp.auth }),
    await testApp.app.inject({ method: 'HEAD', url: '/v1/store/orders', headers: testApp.auth }),
    await testApp.app.inject({ url: '/v1/store/orders/999', headers: testApp.auth }),
    await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: testApp.auth, payload: { petId: 'x' } }),
    await testApp.app.inject({ url: '/v1/store/orders' })
  ]
  assert.deepEqual(answers.map((answer) => [answer.statusCode, answer.headers['api-stability']]), [[200, 'experimental'], [200, 'experimental'], [404, 'experimental'], [400, 'experimental'], [401, 'experimental']])
  assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).headers['api-stability'], undefined)
})
