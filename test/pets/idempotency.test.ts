import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, createKey, errorOf, forEachStore, type TestApp } from '../helper.js'

function post (testApp: TestApp, key: string | undefined, body: unknown, authorization = testApp.auth.authorization) {
  return testApp.app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: { authorization, ...(key !== undefined && { 'idempotency-key': key }) },
    payload: body as object
  })
}

async function petCount (testApp: TestApp): Promise<number> {
  return (await testApp.app.inject({ url: '/v1/pets?limit=100', headers: testApp.auth })).json().length
}

forEachStore((store) => {
  test('a retry with the same key and body replays the answer and creates nothing', async (t) => {
    const testApp = await build(t, { store })
    const body = { name: 'Rex', categoryId: 3 }
    const first = await post(testApp, 'order-123', body)
    assert.equal(first.statusCode, 201)
    assert.equal(first.headers['idempotent-replayed'], undefined)
    for (let i = 0; i < 3; i++) {
      const retry = await post(testApp, 'order-123', { categoryId: 3, name: 'Rex' }) // same body, other key order
      assert.equal(retry.statusCode, 201)
      assert.equal(retry.body, first.body)
      assert.equal(retry.headers.location, first.headers.location)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
    }
    assert.equal(await petCount(testApp), 1)
    const spelledOut = await post(testApp, 'order-123', { name: 'Rex', categoryId: 3, status: 'available' }) // the default, sent
    assert.equal(spelledOut.headers['idempotent-replayed'], 'true', 'a field left out counts as its default')
    assert.equal(await petCount(testApp), 1)
  })

  test('big categoryIds replay exactly', async (t) => {
    const testApp = await build(t, { store })
    const payload = '{"name":"Big","categoryId":9223372036854775807}'
    const send = () => testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'idempotency-key': 'big', 'content-type': 'application/json' }, payload })
    const first = await send()
    assert.match(first.body, /"categoryId":9223372036854775807[,}]/)
    assert.equal((await send()).body, first.body)
  })

  test('the same key with a different body is a 422 and changes nothing', async (t) => {
    const testApp = await build(t, { store })
    assert.equal((await post(testApp, 'k1', { name: 'Rex', categoryId: 3 })).statusCode, 201)
    const reused = await post(testApp, 'k1', { name: 'Max', categoryId: 3 })
    assert.equal(reused.statusCode, 422)
    assert.equal(errorOf(reused).code, 'idempotency_key_reused')
    assert.equal(await petCount(testApp), 1)
  })

  test('concurrent requests with one key create exactly one pet: the others get 409 or the replay', async (t) => {
    const testApp = await build(t, { store })
    const responses = await Promise.all(Array.from({ length: 10 }, () => post(testApp, 'burst', { name: 'Rex', categoryId: 3 })))
    const created = responses.filter((response) => response.statusCode === 201)
    const conflicts = responses.filter((response) => response.statusCode === 409)
    assert.equal(created.length + conflicts.length, 10, responses.map((response) => response.statusCode).join(','))
    assert.ok(created.length >= 1)
    assert.equal(new Set(created.map((response) => response.body)).size, 1, 'every 201 is the same pet')
    for (const conflict of conflicts) assert.equal(errorOf(conflict).code, 'idempotency_key_in_use')
    assert.equal(await petCount(testApp), 1)
    const after = await post(testApp, 'burst', { name: 'Rex', categoryId: 3 })
    assert.equal(after.headers['idempotent-replayed'], 'true')
  })

  test('concurrent retries of a create already answered all get its replay, and a different body its 422: a 409 says only that the first is still running', async (t) => {
    const testApp = await build(t, { store })
    const first = await post(testApp, 'done', { name: 'Rex', categoryId: 3 })
    assert.equal(first.statusCode, 201)
    const retries = await Promise.all(Array.from({ length: 10 }, (_, i) => post(testApp, 'done', { name: i === 9 ? 'Max' : 'Rex', categoryId: 3 })))
    assert.deepEqual(retries.map((retry) => retry.statusCode), [...Array(9).fill(201), 422])
    for (const retry of retries.slice(0, 9)) {
      assert.equal(retry.body, first.body)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
    }
    assert.equal(await petCount(testApp), 1)
  })

  test('keys belong to one API key; requests without a key are not deduplicated', async (t) => {
    const testApp = await build(t, { store })
    const other = await createKey(testApp.db, 'other')
    assert.equal((await post(testApp, 'shared', { name: 'Rex', categoryId: 3 })).statusCode, 201)
    const second = await post(testApp, 'shared', { name: 'Rex', categoryId: 3 }, `Bearer ${other.key}`)
    assert.equal(second.statusCode, 201)
    assert.equal(second.headers['idempotent-replayed'], undefined)
    await post(testApp, undefined, { name: 'Rex', categoryId: 3 })
    await post(testApp, undefined, { name: 'Rex', categoryId: 3 })
    assert.equal(await petCount(testApp), 4)
  })

  test('a key is kept for 24 hours, then may be used again', async (t) => {
    const testApp = await build(t, { store })
    assert.equal((await post(testApp, 'old', { name: 'Rex', categoryId: 3 })).statusCode, 201)
    await testApp.db.updateTable('idempotency_keys').set({ created_at: new Date(Date.now() - 24 * 3600_000 - 1000).toISOString() }).execute()
    const again = await post(testApp, 'old', { name: 'Max', categoryId: 4 })
    assert.equal(again.statusCode, 201)
    assert.equal(again.headers['idempotent-replayed'], undefined)
    assert.equal(await petCount(testApp), 2)
    // The key now holds the new answer in place of the expired one.
    const retried = await post(testApp, 'old', { name: 'Max', categoryId: 4 })
    assert.equal(retried.headers['idempotent-replayed'], 'true')
    assert.equal(retried.body, again.body)
    assert.equal((await post(testApp, 'old', { name: 'Rex', categoryId: 3 })).statusCode, 422)
    assert.equal(await petCount(testApp), 2)
  })

  for (const [what, key] of [['empty', ''], ['256 characters', 'k'.repeat(256)], ['a control character', 'a\tb'], ['non-ASCII', 'clé']]) {
    test(`an Idempotency-Key that is ${what} is a 400`, async (t) => {
      const testApp = await build(t, { store })
      const response = await post(testApp, key, { name: 'Rex', categoryId: 3 })
      assert.equal(response.statusCode, 400)
      assert.equal(errorOf(response).code, 'validation_failed')
      assert.equal(await petCount(testApp), 0)
    })
  }
})
