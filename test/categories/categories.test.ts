import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { Migrator, sql } from 'kysely'
import { foldedName } from '../../src/categories/category-name-key.js'
import { loadConfig } from '../../src/config.js'
import { MIGRATIONS } from '../../src/db/migrate.js'
import { isPostgres } from '../../src/db/dialect.js'
import { buildApp } from '../../src/app.js'
import { seededRandom } from '../seeded-random.js'
import { build, checkAnswers, clientFor, createKey, createPet, createTestStore, defer, errorOf, forEachStore, nextLink, openTestStore, TEST_LIMITS, type TestApp } from '../helper.js'

async function createCategory (testApp: TestApp, name: string, headers: Record<string, string> = {}) {
  return await testApp.app.inject({ method: 'POST', url: '/v1/categories', headers: { ...testApp.auth, ...headers }, payload: { name } })
}

forEachStore((store) => {
  test('createCategory stores the category; getCategory and listCategories answer it, all marked beta', async (t) => {
    const testApp = await build(t, { store })
    const client = await clientFor(testApp)
    const { data: created, response } = await client.POST('/categories', { body: { name: 'Dogs' } })
    assert.equal(response.status, 201)
    assert.deepEqual(created, { id: created!.id, name: 'Dogs' })
    assert.equal(response.headers.get('location'), `/v1/categories/${created!.id}`)
    assert.equal(response.headers.get('api-stability'), 'beta')

    const fetched = await client.GET('/categories/{categoryId}', { params: { path: { categoryId: created!.id } } })
    assert.deepEqual(fetched.data, created)
    assert.equal(fetched.response.headers.get('api-stability'), 'beta')
    const listed = await client.GET('/categories')
    assert.deepEqual(listed.data, [created])
    assert.equal(listed.response.headers.get('api-stability'), 'beta')
  })

  test('names are unique after NFC and full case folding: a duplicate is 409 category_exists and changes nothing', async (t) => {
    const testApp = await build(t, { store })
    const groups = [
      ['Straße', 'STRASSE', 'strasse', 'STRAẞE'],
      ['Café', 'Cafe\u0301', 'CAFÉ', 'CAFE\u0301'],
      ['ǅemal', 'Ǆemal', 'ǆemal'],
      ['Σίσυφος', 'ΣΊΣΥΦΟΣ', 'σίσυφοσ']
    ]
    for (const [first, ...same] of groups) {
      const created = await createCategory(testApp, first!)
      assert.equal(created.statusCode, 201, first)
      for (const name of same) {
        const duplicate = await createCategory(testApp, name)
        assert.equal(duplicate.statusCode, 409, name)
        assert.deepEqual(errorOf(duplicate), {
          code: 'category_exists',
          status: 409,
          message: `A category named ${JSON.stringify(first)} exists already (id ${created.json().id}); names are compared without regard to case`
        })
      }
    }
    // Folding is not lower-casing: the dotless ı folds to itself, so it is a name of its own.
    for (const name of ['Istanbul', 'ıstanbul']) assert.equal((await createCategory(testApp, name)).statusCode, 201, name)
    const all = await testApp.app.inject({ url: '/v1/categories?limit=100', headers: testApp.auth })
    assert.deepEqual(all.json().map((category: { name: string }) => category.name), [...groups.map(([first]) => first), 'Istanbul', 'ıstanbul'])
  })

  test('a name padded with kilobytes of whitespace is stored and compared as any other: 201, then 409 in another case; never a 5xx (PostgreSQL refused its index entry)', async (t) => {
    const testApp = await build(t, { store })
    // Whitespace that varies, as PostgreSQL does not compress it under its index entries' 2,704 bytes.
    const spaces = ' \t\n\r\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u3000'
    const random = seededRandom(7)
    const padding = Array.from({ length: 5000 }, () => spaces[Math.floor(random() * spaces.length)]).join('')
    const padded = await createCategory(testApp, `Dogs${padding}`)
    assert.equal(padded.statusCode, 201, padded.body)
    assert.equal(padded.json().name, `Dogs${padding}`, 'stored as sent')
    const duplicate = await createCategory(testApp, `DOGS${padding}`)
    assert.equal(duplicate.statusCode, 409, duplicate.body)
    assert.equal(errorOf(duplicate).code, 'category_exists')
    assert.ok(errorOf(duplicate).message.length < 500, 'the name is quoted cut short, not its kilobytes of whitespace')
    assert.equal((await createCategory(testApp, 'Dogs')).statusCode, 201, 'the name without its padding is another name')
    // A long name's key is its digest: a name spelling that digest is a name of its own.
    const digest = createHash('sha256').update(foldedName(`Dogs${padding}`)).digest('hex')
    for (const name of [`sha256:${digest}`, `SHA256:${digest}`]) {
      const spelled = await createCategory(testApp, name)
      assert.equal(spelled.statusCode, name.startsWith('sha') ? 201 : 409, `${name}: ${spelled.body}`)
    }
  })

  test('a long name stored before long names were keyed by their digest stays unique after the migration', async (t) => {
    const { db, store: opened, databaseUrl } = await createTestStore(t, store)
    const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } })
    assert.equal((await migrator.migrateTo('009-notify-pet-changes')).error, undefined)
    const padding = ' \t\n'.repeat(400)
    // The last spells the digest the one before it is re-keyed to: that one must wait for it.
    const spelled = `sha256:${createHash('sha256').update('sha256:abc').digest('hex')}`
    const stored = [`Cats${padding}`, 'SHA256:abc', spelled]
    for (const name of stored) {
      const oldKey = name.normalize('NFC').toLowerCase() // what the key was for these names: NFC and folding
      await db.insertInto('categories').values({ name, name_key: oldKey, created_at: new Date().toISOString() } as never).execute()
    }
    assert.equal((await migrator.migrateToLatest()).error, undefined)
    const app = await buildApp({ config: loadConfig({ DATABASE_URL: databaseUrl }), store: opened, limits: TEST_LIMITS })
    defer(t, () => app.close())
    checkAnswers(t, app)
    const { key } = await createKey(db)
    for (const name of [`CATS${padding}`, 'sha256:ABC', spelled.toUpperCase()]) {
      const duplicate = await app.inject({ method: 'POST', url: '/v1/categories', headers: { authorization: `Bearer ${key}` }, payload: { name } })
      assert.equal(duplicate.statusCode, 409, `${name.slice(0, 10)}: ${duplicate.body}`)
    }
  })

  test('concurrent creates of one name, however cased, make one category: the others get 409, none a 5xx', async (t) => {
    const testApp = await build(t, { store })
    const names = Array.from({ length: 12 }, (_, i) => i % 2 === 0 ? 'Birds' : 'BIRDS')
    const answers = await Promise.all(names.map((name) => createCategory(testApp, name)))
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [201, ...Array(11).fill(409)])
    assert.equal((await testApp.app.inject({ url: '/v1/categories', headers: testApp.auth })).json().length, 1)
  })

  test('createCategory with an Idempotency-Key replays its first answer byte for byte and refuses another body', async (t) => {
    const testApp = await build(t, { store })
    const first = await createCategory(testApp, 'Fish', { 'idempotency-key': 'cat-1' })
    assert.equal(first.statusCode, 201)
    assert.equal(first.headers['idempotent-replayed'], undefined)
    const retry = await createCategory(testApp, 'Fish', { 'idempotency-key': 'cat-1' })
    assert.equal(retry.statusCode, 201)
    assert.equal(retry.headers['idempotent-replayed'], 'true')
    assert.equal(retry.body, first.body)
    assert.equal(retry.headers.location, first.headers.location)

    const other = await createCategory(testApp, 'Cats', { 'idempotency-key': 'cat-1' })
    assert.equal(other.statusCode, 422)
    assert.equal(errorOf(other).code, 'idempotency_key_reused')
    assert.equal(errorOf(other).message, 'This Idempotency-Key was used with a different request body')
    // One key serves one create of any kind; the refusal says which it served.
    const pet = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'idempotency-key': 'cat-1' }, payload: { name: 'Fish', categoryId: 1 } })
    assert.equal(pet.statusCode, 422)
    assert.equal(errorOf(pet).message, 'This Idempotency-Key was used for another operation, a create at /v1/categories: use a new key')
    // An instance with another PUBLIC_BASE_URL (set since, or a rolling deploy's) replays it all the same.
    const renamed = await buildApp({ config: { ...testApp.config, PUBLIC_BASE_URL: 'https://api.example.com/shop' }, store: testApp.store, limits: TEST_LIMITS })
    defer(t, () => renamed.close())
    const elsewhere = await renamed.inject({ method: 'POST', url: '/v1/categories', headers: { ...testApp.auth, 'idempotency-key': 'cat-1' }, payload: { name: 'Fish' } })
    assert.equal(elsewhere.statusCode, 201, elsewhere.body)
    assert.equal(elsewhere.headers['idempotent-replayed'], 'true')
    const duplicate = await createCategory(testApp, 'FISH', { 'idempotency-key': 'cat-2' })
    assert.equal(duplicate.statusCode, 409, 'a refused create is not kept: the key is still free')
    const names = (await testApp.app.inject({ url: '/v1/categories', headers: testApp.auth })).json().map((category: { name: string }) => category.name)
    assert.deepEqual(names, ['Fish'])
  })

  test('one Idempotency-Key claimed at once by a pet on one instance and a category on another: one is created, the other refused, never a 5xx', async (t) => {
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '0' } })
    const other = await buildApp({ config: testApp.config, store: openTestStore(t, testApp.config.DATABASE_URL, { poolSize: 4 }), limits: TEST_LIMITS })
    defer(t, () => other.close())
    checkAnswers(t, other)
    const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => await Promise.all([
      testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'idempotency-key': `k${i}` }, payload: { name: `Pet ${i}`, categoryId: 1 } }),
      other.inject({ method: 'POST', url: '/v1/categories', headers: { ...testApp.auth, 'idempotency-key': `k${i}` }, payload: { name: `Category ${i}` } })
    ])))
    for (const [i, pair] of answers.entries()) {
      assert.deepEqual(pair.map((answer) => answer.statusCode).sort(), [201, 422], `key k${i}: ${pair.map((answer) => answer.body).join(' ')}`)
    }
  })

  test('listCategories pages with Link: rel="next" and refuses a cursor of another list', async (t) => {
    const testApp = await build(t, { store })
    const names = ['A', 'B', 'C', 'D', 'E']
    for (const name of names) assert.equal((await createCategory(testApp, name)).statusCode, 201)
    const seen: string[] = []
    let url: string | undefined = '/v1/categories?limit=2'
    while (url !== undefined) {
      const page: LightMyRequestResponse = await testApp.app.inject({ url, headers: testApp.auth })
      assert.equal(page.statusCode, 200)
      seen.push(...page.json().map((category: { name: string }) => category.name))
      url = nextLink(page.headers.link)
    }
    assert.deepEqual(seen, names)

    for (const name of ['Rex', 'Tom', 'Max']) await createPet(testApp, { name, categoryId: 1 })
    const petsCursor = new URL(nextLink((await testApp.app.inject({ url: '/v1/pets?limit=1', headers: testApp.auth })).headers.link)!, 'http://x').searchParams.get('cursor')!
    const refused = await testApp.app.inject({ url: `/v1/categories?limit=1&cursor=${petsCursor}`, headers: testApp.auth })
    assert.equal(refused.statusCode, 400)
    assert.equal(errorOf(refused).code, 'validation_failed')
  })

  test('getCategory answers 404 for an unknown id and 400 for a bad one; bad bodies are 400 and store nothing', async (t) => {
    const testApp = await build(t, { store })
    const missing = await testApp.app.inject({ url: '/v1/categories/999', headers: testApp.auth })
    assert.deepEqual(errorOf(missing), { code: 'not_found', status: 404, message: 'No category with id 999' })
    for (const id of ['abc', '0', '9223372036854775808']) {
      const bad = await testApp.app.inject({ url: `/v1/categories/${id}`, headers: testApp.auth })
      assert.deepEqual(errorOf(bad), { code: 'validation_failed', status: 400, message: 'Path parameter `categoryId` must be an integer from 1 to 9223372036854775807' })
    }
    for (const payload of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, { name: 'Dogs', extra: 1 }, { name: 42 }, { name: 'a\u0000b' }]) {
      const bad = await testApp.app.inject({ method: 'POST', url: '/v1/categories', headers: testApp.auth, payload })
      assert.equal(bad.statusCode, 400, JSON.stringify(payload))
      assert.equal(errorOf(bad).code, 'validation_failed')
    }
    assert.deepEqual((await testApp.app.inject({ url: '/v1/categories', headers: testApp.auth })).json(), [])
  })

  test('categories:read lists and fetches but cannot create; categories:write creates', async (t) => {
    const testApp = await build(t, { store })
    const { key: reader } = await createKey(testApp.db, 'reader', { scopes: 'categories:read' })
    const { key: writer } = await createKey(testApp.db, 'writer', { scopes: 'categories:write' })
    const refused = await testApp.app.inject({ method: 'POST', url: '/v1/categories', headers: { authorization: `Bearer ${reader}` }, payload: { name: 'Dogs' } })
    assert.equal(refused.statusCode, 403)
    const created = await testApp.app.inject({ method: 'POST', url: '/v1/categories', headers: { authorization: `Bearer ${writer}` }, payload: { name: 'Dogs' } })
    assert.equal(created.statusCode, 201)
    const listed = await testApp.app.inject({ url: '/v1/categories', headers: { authorization: `Bearer ${reader}` } })
    assert.deepEqual(listed.json(), [created.json()])
  })

  test('createPet still takes any categoryId, existing or not; listPets filters by categoryId, alone or with status, across pages', async (t) => {
    const testApp = await build(t, { store })
    const dogs = (await createCategory(testApp, 'Dogs')).json()
    const strays = await createPet(testApp, { name: 'Nobody', categoryId: 999 })
    assert.equal(strays.categoryId, 999, 'a category need not exist')
    const pets = []
    for (let i = 0; i < 9; i++) pets.push(await createPet(testApp, { name: `Pet ${i}`, categoryId: i % 3 === 0 ? dogs.id : 5, status: i % 2 === 0 ? 'available' : 'sold' }))

    async function everyPage (query: string): Promise<number[]> {
      const ids: number[] = []
      let url: string | undefined = `/v1/pets?${query}`
      while (url !== undefined) {
        const page: LightMyRequestResponse = await testApp.app.inject({ url, headers: testApp.auth })
        assert.equal(page.statusCode, 200, page.body)
        ids.push(...page.json().map((pet: { id: number }) => pet.id))
        url = nextLink(page.headers.link)
        if (url === undefined) break
        const kept = new URL(url, 'http://x').searchParams
        for (const [name, value] of new URLSearchParams(query)) assert.equal(kept.get(name), value, `the next link keeps ${name}`)
      }
      return ids
    }
    const ofDogs = pets.filter((pet) => pet.categoryId === dogs.id)
    assert.deepEqual(await everyPage(`categoryId=${dogs.id}&limit=1`), ofDogs.map((pet) => pet.id))
    assert.deepEqual(await everyPage(`status=available&categoryId=${dogs.id}&limit=1`), ofDogs.filter((pet) => pet.status === 'available').map((pet) => pet.id))
    assert.deepEqual(await everyPage('categoryId=999'), [strays.id])
    assert.deepEqual(await everyPage('categoryId=12345'), [])

    const first = await testApp.app.inject({ url: `/v1/pets?categoryId=${dogs.id}&limit=1`, headers: testApp.auth })
    const cursor = new URL(nextLink(first.headers.link)!, 'http://x').searchParams.get('cursor')!
    for (const query of ['categoryId=5', '', 'status=available']) {
      const refused = await testApp.app.inject({ url: `/v1/pets?${query}&limit=1&cursor=${cursor}`, headers: testApp.auth })
      assert.deepEqual(errorOf(refused), { code: 'validation_failed', status: 400, message: 'Query parameter `cursor` is malformed or was issued for another filter' }, query)
    }
    for (const id of ['0', 'abc', '-1', '9223372036854775808']) {
      const bad = await testApp.app.inject({ url: `/v1/pets?categoryId=${id}`, headers: testApp.auth })
      assert.equal(errorOf(bad).code, 'validation_failed', id)
    }
  })

  test('listPets by category walks the (category_id, id) index, without a sort, on a large store', async (t) => {
    const testApp = await build(t, { store })
    await testApp.store.pets.insertMany(Array.from({ length: 5000 }, (_, i) => ({ name: `Pet ${i}`, categoryId: BigInt(1 + (i % 50)), status: 'available' as const })))
    await testApp.store.pets.refreshStatistics()
    const query = sql`select id from pets where category_id = ${7n} and id > ${0n} order by id limit ${21}`
    const plan = isPostgres(testApp.db) ?
        (await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(testApp.db)).rows.map((row) => row['QUERY PLAN']).join('\n') :
        (await sql<{ detail: string }>`explain query plan ${query}`.execute(testApp.db)).rows.map((row) => row.detail).join('\n')
    assert.match(plan, /pets_category_id_id/, plan)
    assert.doesNotMatch(plan, /Sort|TEMP B-TREE/i, plan)
  })
})
