import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Migrator } from 'kysely'
import { generateApiKey } from '../../src/api-keys/api-key.service.js'
import { rotateApiKey } from '../../src/api-keys/api-key.repository.js'
import { grantedScopes, SCOPES, type Scope } from '../../src/api-keys/scopes.js'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { MIGRATIONS } from '../../src/db/migrate.js'
import { systemClock } from '../../src/clock.js'
import { build, checkAnswers, createKey, createTestStore, defer, errorOf, forEachStore, manualClock, TEST_LIMITS } from '../helper.js'

interface Operation { method: 'GET' | 'HEAD' | 'POST' | 'PATCH', url: string, payload?: object, scope: Scope }

// Every operation behind a key, with a request that would otherwise be answered 2xx or 4xx past the scope.
const OPERATIONS: Operation[] = [
  { method: 'GET', url: '/v1/pets', scope: 'pets:read' },
  { method: 'HEAD', url: '/v1/pets', scope: 'pets:read' },
  { method: 'GET', url: '/v1/pets/1', scope: 'pets:read' },
  { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 }, scope: 'pets:write' },
  { method: 'GET', url: '/v1/categories', scope: 'categories:read' },
  { method: 'GET', url: '/v1/categories/1', scope: 'categories:read' },
  { method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' }, scope: 'categories:write' },
  { method: 'GET', url: '/v1/events', scope: 'events:read' },
  { method: 'GET', url: '/v1/store/orders', scope: 'orders:read' },
  { method: 'GET', url: '/v1/store/orders/1', scope: 'orders:read' },
  { method: 'POST', url: '/v1/store/orders', payload: { petId: 1 }, scope: 'orders:write' },
  { method: 'PATCH', url: '/v1/store/orders/1', payload: { status: 'approved' }, scope: 'orders:write' }
]

const INSUFFICIENT = (scope: Scope) => `Bearer realm="petstore", error="insufficient_scope", scope="${scope}"`

forEachStore((store) => {
  test('each scope allows exactly its operations and refuses the others with 403 and the scope it needs', async (t) => {
    const testApp = await build(t, { store })
    for (const held of [...SCOPES, '*:read', '*', 'orders:write pets:read']) {
      const { key } = await createKey(testApp.db, held, { scopes: held })
      for (const { method, url, payload, scope } of OPERATIONS) {
        const response = await testApp.app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}` } })
        const what = `${held} ${method} ${url}`
        if (grantedScopes(held).has(scope)) {
          assert.ok(response.statusCode !== 401 && response.statusCode !== 403, `${what}: ${response.statusCode}`)
        } else {
          assert.equal(response.statusCode, 403, what)
          assert.equal(response.headers['www-authenticate'], INSUFFICIENT(scope), what)
          if (method !== 'HEAD') assert.deepEqual(errorOf(response), { code: 'insufficient_scope', status: 403, message: `This operation needs the scope ${scope}, which the API key does not hold` })
        }
      }
    }
  })

  test('401 comes before 403, and 403 before any 400, 404, 413 or 415 a request would get', async (t) => {
    const testApp = await build(t, { store })
    const { key } = await createKey(testApp.db, 'reader', { scopes: 'pets:read' })
    const reader = { authorization: `Bearer ${key}` }
    const refused = [
      await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: reader, payload: { name: 42 } }),
      await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...reader, 'content-type': 'text/plain' }, payload: 'Rex' }),
      await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: reader, payload: { name: 'x'.repeat(20_000), categoryId: 1 } }),
      await testApp.app.inject({ method: 'GET', url: '/v1/store/orders/abc', headers: reader }),
      await testApp.app.inject({ method: 'GET', url: '/v1/store/orders/999', headers: reader })
    ]
    for (const response of refused) assert.equal(response.statusCode, 403, response.body)
    const unknown = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { authorization: `Bearer ${generateApiKey().key}` }, payload: { name: 42 } })
    assert.equal(unknown.statusCode, 401)
  })

  test('a path no operation serves answers any valid key alike, whatever its scopes: one with a trailing slash too', async (t) => {
    const testApp = await build(t, { store })
    const { key } = await createKey(testApp.db, 'events', { scopes: 'events:read' })
    for (const url of ['/v1/pets/', '/v1/categories/', '/v1/store/orders/', '/v1/webhooks/', '/v1/nothing']) {
      const answers = [await testApp.app.inject({ url, headers: { authorization: `Bearer ${key}` } }), await testApp.app.inject({ url, headers: testApp.auth })]
      const message = url.endsWith('/') ? 'No resource at this path: the service\'s paths take no trailing slash' : 'No resource at this path'
      assert.deepEqual(answers.map((answer) => [answer.statusCode, errorOf(answer).message]), Array(2).fill([404, message]), url)
    }
  })

  test('a key made before scopes existed keeps every scope after the migration', async (t) => {
    const { db, store: opened, databaseUrl } = await createTestStore(t, store)
    const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } })
    // Back to the schema before scopes, a key made there, then forward again.
    assert.equal((await migrator.migrateTo('004-create-orders')).error, undefined)
    const { key, hash, hint } = generateApiKey()
    await db.insertInto('api_keys').values({ name: 'old', key_hash: hash, key_hint: hint, created_at: new Date().toISOString() } as never).execute()
    assert.equal((await migrator.migrateToLatest()).error, undefined)
    assert.deepEqual(await db.selectFrom('api_keys').select(['scopes', 'expires_at', 'rotated_from']).execute(), [{ scopes: '*', expires_at: null, rotated_from: null }])

    const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store: opened, limits: TEST_LIMITS })
    defer(t, () => app.close())
    checkAnswers(t, app)
    for (const { method, url, payload } of OPERATIONS) {
      const response = await app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}` } })
      assert.ok(response.statusCode !== 401 && response.statusCode !== 403, `${method} ${url}: ${response.statusCode}`)
    }
  })

  test('an expired key is refused from the millisecond it expires, on two instances, cached or not', async (t) => {
    const clock = manualClock()
    const first = await build(t, { store, clock })
    const second = await buildApp({ config: first.config, store: first.store, limits: TEST_LIMITS })
    defer(t, () => second.close())
    checkAnswers(t, second)
    const expiresAt = new Date(clock.now() + 3_600_000)
    const { key } = await createKey(first.db, 'short', { expiresAt }, clock)
    const headers = { authorization: `Bearer ${key}` }
    for (const app of [first.app, second]) assert.equal((await app.inject({ url: '/v1/pets', headers })).statusCode, 200)

    clock.advance(3_600_000 - 1)
    for (const app of [first.app, second]) assert.equal((await app.inject({ url: '/v1/pets', headers })).statusCode, 200, 'a millisecond before')
    clock.advance(1)
    for (const app of [first.app, second]) {
      const refused = await app.inject({ url: '/v1/pets', headers })
      assert.equal(refused.statusCode, 401)
      assert.equal(refused.headers['www-authenticate'], 'Bearer realm="petstore", error="invalid_token", error_description="The API key expired"')
      assert.equal(errorOf(refused).message, 'The API key expired')
    }
    clock.advance(60_000)
    assert.equal((await second.inject({ url: '/v1/pets', headers })).statusCode, 401, 'looked up again: still expired')
    // Expired is expired, whatever the scope: a 401, not a 403.
    const { key: reader } = await createKey(first.db, 'reader', { scopes: 'orders:read', expiresAt: new Date(clock.now() + 1000) }, clock)
    clock.advance(1000)
    assert.equal((await first.app.inject({ method: 'POST', url: '/v1/pets', headers: { authorization: `Bearer ${reader}` }, payload: { name: 'Rex', categoryId: 1 } })).statusCode, 401)
  })

  test('a key expiring within 7 days says when on every answer, errors included', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, clock })
    const expiresAt = new Date(clock.now() + 8 * 86_400_000)
    const { key } = await createKey(testApp.db, 'soon', { expiresAt }, clock)
    const headers = { authorization: `Bearer ${key}` }
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers })).headers['api-key-expiration'], undefined, '8 days away')
    clock.advance(86_400_000 + 1)
    for (const url of ['/v1/pets', '/v1/pets/999', '/v1/pets?limit=0']) {
      assert.equal((await testApp.app.inject({ url, headers })).headers['api-key-expiration'], expiresAt.toUTCString(), url)
    }
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })).headers['api-key-expiration'], undefined, 'a key that never expires')
  })

  test('a rotated key works beside its replacement until the overlap ends; the replacement keeps its name and scopes', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, clock })
    const { id, key: oldKey } = await createKey(testApp.db, 'shop front', { scopes: 'pets:read' }, clock)
    const { key: newKey, hash, hint } = generateApiKey()
    assert.equal((await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${oldKey}` } })).statusCode, 200, 'cached before the rotation')
    const { id: newId, oldKeyExpiresAt } = await rotateApiKey(testApp.db, id, { hash, hint, expiry: () => undefined }, 3_600_000, clock)
    assert.equal(oldKeyExpiresAt, new Date(clock.now() + 3_600_000).toISOString())
    const [, replacement] = await testApp.db.selectFrom('api_keys').select(['id', 'name', 'scopes', 'rotated_from', 'expires_at']).where('id', 'in', [id, newId]).orderBy('id').execute()
    assert.deepEqual(replacement, { id: newId, name: 'shop front', scopes: 'pets:read', rotated_from: id, expires_at: null })

    const status = async (key: string, method: 'GET' | 'POST' = 'GET') => (await testApp.app.inject({ method, url: '/v1/pets', headers: { authorization: `Bearer ${key}` }, payload: method === 'POST' ? { name: 'Rex', categoryId: 1 } : undefined })).statusCode
    assert.deepEqual([await status(oldKey), await status(newKey), await status(newKey, 'POST')], [200, 200, 403])
    clock.advance(3_600_000 - 1)
    assert.equal(await status(oldKey), 200, 'within the overlap')
    clock.advance(1)
    assert.deepEqual([await status(oldKey), await status(newKey)], [401, 200])
    await assert.rejects(rotateApiKey(testApp.db, 999n, { ...generateApiKey(), expiry: () => undefined }, 60_000, clock), /no API key with id 999/)
    const { id: expired } = await createKey(testApp.db, 'expired', { expiresAt: new Date(clock.now() - 1) }, clock)
    await assert.rejects(rotateApiKey(testApp.db, expired, { ...generateApiKey(), expiry: () => undefined }, 60_000, clock), new RegExp(`API key ${expired} expired at ${new Date(clock.now() - 1).toISOString()}`))
  })

  test('a replacement is told the lifetime its key was made with; a key rotated already is refused, naming its replacement', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, clock })
    const days = (n: number) => n * 86_400_000
    const { id } = await createKey(testApp.db, 'shop', { expiresAt: new Date(clock.now() + days(90)) }, clock)
    const { id: forever } = await createKey(testApp.db, 'forever', {}, clock)
    clock.advance(days(10))
    const told: Array<number | undefined> = []
    const replacement = () => ({ ...generateApiKey(), expiry: (lifetime: number | undefined) => { told.push(lifetime); return lifetime === undefined ? undefined : new Date(clock.now() + lifetime) } })
    const first = await rotateApiKey(testApp.db, id, replacement(), days(1), clock)
    assert.equal(first.expiresAt?.getTime(), clock.now() + days(90))
    clock.advance(3_600_000)
    await assert.rejects(rotateApiKey(testApp.db, id, replacement(), days(1), clock), new RegExp(`API key ${id} was rotated already: key ${first.id} replaces it; rotate that one`))
    const second = await rotateApiKey(testApp.db, first.id, replacement(), days(1), clock)
    await rotateApiKey(testApp.db, forever, replacement(), days(1), clock)
    assert.deepEqual(told, [days(90), days(90), undefined], 'the lifetime made with, not one cut short by an overlap')
    assert.equal(second.expiresAt?.getTime(), clock.now() + days(90))
    clock.advance(days(1))
    await assert.rejects(rotateApiKey(testApp.db, id, replacement(), days(1), clock), new RegExp(`API key ${id} was rotated already: key ${first.id} replaces it`), 'expired since, its replacement named')
  })

  test('two rotations of one key at once make one replacement; the other is refused', async (t) => {
    const testApp = await build(t, { store })
    const { id } = await createKey(testApp.db, 'shop')
    const rotations = await Promise.allSettled([0, 1].map(async () => await rotateApiKey(testApp.db, id, { ...generateApiKey(), expiry: () => undefined }, 60_000, systemClock)))
    assert.deepEqual(rotations.map(({ status }) => status).sort(), ['fulfilled', 'rejected'])
    const refused = rotations.find((rotation) => rotation.status === 'rejected')
    assert.match(String(refused?.reason), new RegExp(`API key ${id} was rotated already: key \\d+ replaces it`))
    const replacements = await testApp.db.selectFrom('api_keys').select('id').where('rotated_from', '=', id).execute()
    assert.equal(replacements.length, 1)
  })
})
