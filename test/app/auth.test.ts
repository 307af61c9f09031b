import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'kysely'
import { revokeApiKey } from '../../src/api-keys/api-key.repository.js'
import { generateApiKey } from '../../src/api-keys/api-key.service.js'
import { systemClock } from '../../src/clock.js'
import { build, createKey, errorOf, forEachStore } from '../helper.js'

// With rate limiting off, a cached key takes a path of its own (no promise): both are tested.
for (const limit of ['600', '0']) describe(`with RATE_LIMIT_PER_MINUTE=${limit}`, () => forEachStore((store) => {
  const NO_CACHE = { cacheTtlMs: 1, cacheMax: 10, usageFlushMs: 60_000 }
  const env = { RATE_LIMIT_PER_MINUTE: limit }

  test('every /v1 operation answers 401 without a key, with WWW-Authenticate: Bearer', async (t) => {
    const testApp = await build(t, { store, env })
    for (const [method, url] of [['GET', '/v1/pets'], ['POST', '/v1/pets'], ['GET', '/v1/pets/1']] as const) {
      const response = await testApp.app.inject({ method, url, payload: method === 'POST' ? { name: 'Rex', categoryId: 1 } : undefined })
      assert.equal(response.statusCode, 401, `${method} ${url}`)
      assert.equal(errorOf(response).code, 'unauthorized')
      assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore"')
    }
  })

  test('a malformed, unknown, other-scheme or empty credential is a 401', async (t) => {
    const testApp = await build(t, { store, env })
    const forged = generateApiKey().key
    const cases = [
      `Bearer ${forged}`, // well formed but never issued
      `Bearer ${forged.slice(0, -1)}${forged.endsWith('A') ? 'B' : 'A'}`, // bad checksum
      'Bearer ps_short',
      'Bearer ',
      'Bearer',
      `Basic ${Buffer.from('user:pass').toString('base64')}`,
      `Token ${forged}`,
      testApp.auth.authorization.replace('Bearer ', 'Bearer  x'),
      // A byte 0xA0 after the key (read as Latin-1, U+00A0): trimmed as whitespace, it passed.
      `${testApp.auth.authorization}\u00a0`,
      'x'.repeat(2000)
    ]
    for (const authorization of cases) {
      const response = await testApp.app.inject({ url: '/v1/pets', headers: { authorization } })
      assert.equal(response.statusCode, 401, authorization)
      assert.equal(errorOf(response).code, 'unauthorized')
      assert.match(String(response.headers['www-authenticate']), /^Bearer realm="petstore"/)
    }
  })

  test('a wrong key gets error="invalid_token" (RFC 6750 section 3)', async (t) => {
    const testApp = await build(t, { store, env })
    const response = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${generateApiKey().key}` } })
    assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore", error="invalid_token"')
  })

  test('the scheme name is case-insensitive', async (t) => {
    const testApp = await build(t, { store, env })
    const key = testApp.auth.authorization.slice('Bearer '.length)
    for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
      const response = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `${scheme} ${key}` } })
      assert.equal(response.statusCode, 200, scheme)
    }
    // Spaces and tabs after a header's value are not part of it (RFC 9110, section 5.5).
    const trailing = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key} \t ` } })
    assert.equal(trailing.statusCode, 200)
  })

  test('a revoked key is refused once the cache entry expires', async (t) => {
    const testApp = await build(t, { store, env, verifierOptions: NO_CACHE })
    const { id, key } = await createKey(testApp.db, 'to revoke')
    const headers = { authorization: `Bearer ${key}` }
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers })).statusCode, 200)
    await revokeApiKey(testApp.db, id, systemClock)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const response = await testApp.app.inject({ url: '/v1/pets', headers })
    assert.equal(response.statusCode, 401)
    assert.equal(response.headers['www-authenticate'], 'Bearer realm="petstore", error="invalid_token"')
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).statusCode, 200, 'other keys still work')
  })

  test('a key created while the server runs works at once', async (t) => {
    const testApp = await build(t, { store, env })
    const unknown = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${generateApiKey().key}` } })
    assert.equal(unknown.statusCode, 401)
    const { key } = await createKey(testApp.db, 'new')
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })).statusCode, 200)
  })

  test('authentication comes first: no 404, 405, 400, 413 or 415 before the 401', async (t) => {
    const testApp = await build(t, { store, env })
    const requests = [
      { method: 'GET', url: '/v1/nothing-here' },
      { method: 'GET', url: '/v1/pets/999' },
      { method: 'GET', url: '/v1/pets/abc' },
      { method: 'GET', url: '/v1/pets?limit=0' },
      { method: 'DELETE', url: '/v1/pets/1' },
      { method: 'POST', url: '/v1/pets', payload: '{"bad json', headers: { 'content-type': 'application/json' } },
      { method: 'POST', url: '/v1/pets', payload: 'x'.repeat(20_000), headers: { 'content-type': 'application/json' } },
      { method: 'POST', url: '/v1/pets', payload: 'name=Rex', headers: { 'content-type': 'text/plain' } }
    ] as const
    for (const request of requests) {
      const response = await testApp.app.inject(request)
      assert.equal(response.statusCode, 401, `${request.method} ${request.url}`)
      assert.equal(errorOf(response).code, 'unauthorized')
    }
  })

  test('last-used times are recorded without a write per request', async (t) => {
    const testApp = await build(t, { store, env })
    const before = await testApp.db.selectFrom('api_keys').select('last_used_at').executeTakeFirstOrThrow()
    assert.equal(before.last_used_at, null)
    await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    const during = await testApp.db.selectFrom('api_keys').select('last_used_at').executeTakeFirstOrThrow()
    assert.equal(during.last_used_at, null, 'not written on the request path')
    await testApp.app.close() // flushes
    const after = await testApp.db.selectFrom('api_keys').select('last_used_at').executeTakeFirstOrThrow()
    assert.ok(after.last_used_at !== null && Date.now() - Date.parse(after.last_used_at) < 60_000)
  })

  test('closing during a store outage goes on without the last-used times it cannot write', async (t) => {
    const testApp = await build(t, { store, env })
    await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    await sql`alter table api_keys rename to api_keys_away`.execute(testApp.db)
    await testApp.app.close() // rejected when the flush failed, and the store was then left open
  })
}))
