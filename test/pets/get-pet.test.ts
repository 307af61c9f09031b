import assert from 'node:assert/strict'
import { test } from 'node:test'
import { build, clientFor, createPet, errorOf, forEachStore } from '../helper.js'

forEachStore((store) => {
  function assertDeprecationHeaders (headers: Record<string, unknown>): void {
    assert.match(String(headers.deprecation), /^@\d+$/)
    assert.equal(headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT')
    const deprecatedAt = Number(String(headers.deprecation).slice(1)) * 1000
    assert.ok(deprecatedAt <= Date.parse(String(headers.sunset)), 'the sunset is not before the deprecation')
    assert.match(String(headers.link), /^<[^>]*\/v1\/pets\?status=available>; rel="successor-version"$/)
  }

  test('getPet returns the pet with the deprecation headers', async (t) => {
    const testApp = await build(t, { store })
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 9, status: 'pending' })
    const client = await clientFor(testApp)
    const { data, response } = await client.GET('/pets/{petId}', { params: { path: { petId: pet.id } } })
    assert.equal(response.status, 200)
    assert.deepEqual(data, pet)
    assertDeprecationHeaders(Object.fromEntries(response.headers))
  })

  test('getPet answers 404 for a pet that does not exist, still deprecated', async (t) => {
    const testApp = await build(t, { store })
    const response = await testApp.app.inject({ url: '/v1/pets/999', headers: testApp.auth })
    assert.equal(response.statusCode, 404)
    assert.equal(errorOf(response).code, 'not_found')
    assertDeprecationHeaders(response.headers)
  })

  for (const petId of ['abc', '1.5', '-1', '0', '1e3', '9223372036854775808', '99999999999999999999999', '%20']) {
    test(`getPet answers 400 for petId ${petId}`, async (t) => {
      const testApp = await build(t, { store })
      const response = await testApp.app.inject({ url: `/v1/pets/${petId}`, headers: testApp.auth })
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(errorOf(response).code, 'validation_failed')
      assertDeprecationHeaders(response.headers)
    })
  }

  test('getPet answers 404 for the largest int64 id', async (t) => {
    const testApp = await build(t, { store })
    const response = await testApp.app.inject({ url: '/v1/pets/9223372036854775807', headers: testApp.auth })
    assert.equal(response.statusCode, 404)
  })

  test('getPet without a key answers 401 with the deprecation headers', async (t) => {
    const testApp = await build(t, { store })
    const response = await testApp.app.inject({ url: '/v1/pets/1' })
    assert.equal(response.statusCode, 401)
    assertDeprecationHeaders(response.headers)
  })
})
