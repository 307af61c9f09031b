import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { PetStatus } from '../../src/client/index.js'
import { build, clientFor, createPet, errorOf, forEachStore, nextLink, type TestApp } from '../helper.js'

forEachStore((store) => {
  async function seed (testApp: TestApp, count: number, status?: PetStatus): Promise<number[]> {
    const ids = []
    for (let i = 0; i < count; i++) ids.push((await createPet(testApp, { name: `Pet ${i}`, categoryId: 1, ...(status && { status }) })).id)
    return ids
  }

  test('listPets returns at most 20 pets by default, in ascending id order', async (t) => {
    const testApp = await build(t, { store })
    const ids = await seed(testApp, 25)
    const client = await clientFor(testApp)
    const { data, response } = await client.GET('/pets')
    assert.equal(response.status, 200)
    assert.deepEqual(data!.map((pet) => pet.id), ids.slice(0, 20))
    assert.equal(response.headers.get('cache-control'), 'no-store')
  })

  test('listPets returns an empty array and no Link on an empty store', async (t) => {
    const testApp = await build(t, { store })
    const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.equal(response.statusCode, 200)
    assert.deepEqual(response.json(), [])
    assert.equal(response.headers.link, undefined)
  })

  test('listPets honours limit and status', async (t) => {
    const testApp = await build(t, { store })
    await seed(testApp, 3, 'sold')
    const available = await seed(testApp, 4, 'available')
    const response = await testApp.app.inject({ url: '/v1/pets?status=available&limit=3', headers: testApp.auth })
    assert.equal(response.statusCode, 200)
    const pets = response.json()
    assert.deepEqual(pets.map((pet: { id: number }) => pet.id), available.slice(0, 3))
    assert.ok(pets.every((pet: { status: string }) => pet.status === 'available'))
    const pending = await testApp.app.inject({ url: '/v1/pets?status=pending', headers: testApp.auth })
    assert.deepEqual(pending.json(), [])
  })

  test('listPets pages with Link rel="next", keeping filter and limit, with no Link on the last page', async (t) => {
    const testApp = await build(t, { store })
    await seed(testApp, 3, 'sold')
    const available = await seed(testApp, 7, 'available')
    const seen = []
    let url: string | undefined = '/v1/pets?status=available&limit=3'
    let pages = 0
    while (url !== undefined) {
      const response: LightMyRequestResponse = await testApp.app.inject({ url, headers: testApp.auth })
      assert.equal(response.statusCode, 200, response.body)
      seen.push(...response.json().map((pet: { id: number }) => pet.id))
      url = nextLink(response.headers.link)
      if (url !== undefined) {
        const query = new URL(url, 'http://x').searchParams
        assert.equal(query.get('limit'), '3')
        assert.equal(query.get('status'), 'available')
      }
      pages++
    }
    assert.deepEqual(seen, available)
    assert.equal(pages, 3)
  })

  test('a page that ends exactly at the last pet has no Link', async (t) => {
    const testApp = await build(t, { store })
    await seed(testApp, 4)
    const response = await testApp.app.inject({ url: '/v1/pets?limit=4', headers: testApp.auth })
    assert.equal(response.json().length, 4)
    assert.equal(response.headers.link, undefined)
  })

  test('paging sees no duplicates or skips while pets are added', async (t) => {
    const testApp = await build(t, { store })
    const ids = await seed(testApp, 5)
    const seen = []
    let url: string | undefined = '/v1/pets?limit=2'
    while (url !== undefined) {
      const response: LightMyRequestResponse = await testApp.app.inject({ url, headers: testApp.auth })
      seen.push(...response.json().map((pet: { id: number }) => pet.id))
      url = nextLink(response.headers.link)
      if (ids.length < 9) ids.push(...await seed(testApp, 2))
    }
    assert.deepEqual(seen, ids)
  })

  test('the next link is absolute when PUBLIC_BASE_URL is set', async (t) => {
    const testApp = await build(t, { store, env: { PUBLIC_BASE_URL: 'https://pets.example.com' } })
    await seed(testApp, 2)
    const response = await testApp.app.inject({ url: '/v1/pets?limit=1', headers: testApp.auth })
    assert.match(nextLink(response.headers.link) ?? '', /^https:\/\/pets\.example\.com\/v1\/pets\?limit=1&cursor=/)
  })

  for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'limit=-1', 'limit=', 'limit=5&limit=6',
    'limit=0x10', 'limit=1e1', 'limit=%205', 'limit=%2B5', 'status=lost', 'status=Available', 'status=', 'color=red', 'status[]=sold']) {
    test(`listPets answers 400 for ${query}`, async (t) => {
      const testApp = await build(t, { store })
      const response = await testApp.app.inject({ url: `/v1/pets?${query}`, headers: testApp.auth })
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(errorOf(response).code, 'validation_failed')
    })
  }

  test('listPets accepts limit 1 and 100', async (t) => {
    const testApp = await build(t, { store })
    await seed(testApp, 2)
    assert.equal((await testApp.app.inject({ url: '/v1/pets?limit=1', headers: testApp.auth })).json().length, 1)
    assert.equal((await testApp.app.inject({ url: '/v1/pets?limit=100', headers: testApp.auth })).json().length, 2)
  })

  test('a forged, malformed or mismatched cursor is a 400', async (t) => {
    const testApp = await build(t, { store })
    await seed(testApp, 3, 'available')
    const first = await testApp.app.inject({ url: '/v1/pets?status=available&limit=1', headers: testApp.auth })
    const cursor = new URL(nextLink(first.headers.link)!, 'http://x').searchParams.get('cursor')!
    const tampered = cursor.slice(0, 5) + (cursor[5] === 'A' ? 'B' : 'A') + cursor.slice(6)
    for (const url of [
      `/v1/pets?cursor=${tampered}`,
      `/v1/pets?status=available&cursor=${tampered}`,
      '/v1/pets?cursor=not-a-cursor',
      `/v1/pets?cursor=${Buffer.from(JSON.stringify({ afterId: 1 })).toString('base64url')}`,
      `/v1/pets?cursor=${cursor}`, // issued for status=available
      `/v1/pets?status=sold&cursor=${cursor}`
    ]) {
      const response = await testApp.app.inject({ url, headers: testApp.auth })
      assert.equal(response.statusCode, 400, url)
      assert.match(errorOf(response).message, /cursor/)
    }
    const valid = await testApp.app.inject({ url: `/v1/pets?status=available&limit=1&cursor=${cursor}`, headers: testApp.auth })
    assert.equal(valid.statusCode, 200)
  })
})
