import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { build, clientFor, createKey, createPet, errorOf, forEachStore, manualClock } from '../helper.js'

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

  test('an id written with leading zeros is the same integer, however many there are', async (t) => {
    const testApp = await build(t, { store })
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 9 })
    for (const zeros of [1, 19, 40]) {
      const response = await testApp.app.inject({ url: `/v1/pets/${'0'.repeat(zeros)}${pet.id}`, headers: testApp.auth })
      assert.equal(response.statusCode, 200, `${zeros} zeros: ${response.body}`)
      assert.equal(response.json().id, pet.id)
    }
    const tooLarge = await testApp.app.inject({ url: `/v1/pets/${'0'.repeat(40)}9223372036854775808`, headers: testApp.auth })
    assert.equal(tooLarge.statusCode, 400)
  })

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

  test('getPet around its sunset: 200 the moment before, then 410 gone for any id, without reading the store', async (t) => {
    const sunset = Date.parse('2030-12-05T00:00:00Z')
    const clock = manualClock(sunset - 86_400_000)
    const testApp = await build(t, { store, clock })
    const pet = await createPet(testApp, { name: 'Rex', categoryId: 1 })
    const get = (url: string, headers = testApp.auth) => testApp.app.inject({ url, headers })

    const dayBefore = await get(`/v1/pets/${pet.id}`)
    assert.equal(dayBefore.statusCode, 200)
    assertDeprecationHeaders(dayBefore.headers)
    clock.advance(86_400_000 - 1)
    assert.equal((await get(`/v1/pets/${pet.id}`)).statusCode, 200, 'a millisecond before')

    clock.advance(1)
    // Gone for good: the store is not asked, so even one whose pets table is gone answers.
    await sql`alter table pets rename to pets_gone`.execute(testApp.db)
    for (const url of [`/v1/pets/${pet.id}`, '/v1/pets/999', '/v1/pets/abc']) {
      const gone = await get(url)
      assert.equal(gone.statusCode, 410, url)
      assert.deepEqual(errorOf(gone), { code: 'gone', status: 410, message: 'getPet was removed on 5 December 2030; use GET /v1/pets (listPets) with the status filter' })
      assertDeprecationHeaders(gone.headers)
    }
    assert.equal((await get('/v1/pets/1', {} as typeof testApp.auth)).statusCode, 401, 'authentication still comes first')
    const { key } = await createKey(testApp.db, 'orders only', { scopes: 'orders:read' }, clock)
    assert.equal((await get('/v1/pets/1', { authorization: `Bearer ${key}` })).statusCode, 403, 'and the scope')

    const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
    for (const method of ['get', 'head']) {
      // And what is checked before it, and what any request may meet: every answer it can give is declared.
      assert.deepEqual(Object.keys(doc.paths['/pets/{petId}'][method].responses), ['400', '401', '403', '405', '408', '410', '414', '417', '429', '431', '500', '501', '503'], `${method} keeps its 410 and what comes before`)
      assert.equal(doc.paths['/pets/{petId}'][method].deprecated, true)
    }
    // The router's answers, before any route: still given, so still declared.
    for (const [method, url, status] of [['GET', '/v1/pets/%zz', 400], ['GET', `/v1/pets/${'1'.repeat(9000)}`, 414], ['DELETE', '/v1/pets/1', 405]] as const) {
      const answer = await testApp.app.inject({ method, url, headers: testApp.auth })
      assert.equal(answer.statusCode, status, url.slice(0, 20))
    }
    assert.equal(doc.paths['/pets/{petId}'].get.responses['400'].content['application/json'].example.code, 'bad_request', 'the router\'s 400, not a parameter\'s')
    assert.deepEqual(doc.paths['/pets/{petId}'].get.responses['400'].headers, {}, 'given before any hook: no deprecation headers')
  })
})
