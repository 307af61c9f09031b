import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { findEventsInSteps, findLastEventId, pruneEvents } from '../../src/events/event.repository.js'
import { pruneExpiredEvents } from '../../src/events/expired-event-prune.js'
import { noteLogReads } from './log-reads.js'
import { build, checkAnswers, createKey, createPet, defer, errorOf, forEachStore, manualClock, nextLink, openTestStore, TEST_LIMITS, type TestApp } from '../helper.js'

interface ListedEvent { id: number, type: string, occurredAt: string, data: Record<string, unknown> }

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const DAY_MS = 24 * 60 * 60 * 1000

async function allEvents (testApp: TestApp, query = ''): Promise<ListedEvent[]> {
  const events: ListedEvent[] = []
  let url: string | undefined = `/v1/events?limit=1000${query}`
  while (url !== undefined) {
    const page: LightMyRequestResponse = await testApp.app.inject({ url, headers: testApp.auth })
    assert.equal(page.statusCode, 200, page.body)
    events.push(...page.json())
    url = nextLink(page.headers.link)
  }
  return events
}

async function post (testApp: TestApp, url: string, payload: object, headers: Record<string, string> = {}) {
  const response = await testApp.app.inject({ method: 'POST', url, headers: { ...testApp.auth, ...headers }, payload })
  assert.ok(response.statusCode < 300, `${url}: ${response.statusCode} ${response.body}`)
  return response.json()
}

async function moveOrder (testApp: TestApp, orderId: number, status: string) {
  const response = await testApp.app.inject({ method: 'PATCH', url: `/v1/store/orders/${orderId}`, headers: testApp.auth, payload: { status } })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

forEachStore((store) => {
  test('every change makes exactly one event of its type, with the resource as the API answers it', async (t) => {
    const testApp = await build(t, { store })
    const rex = await createPet(testApp, { name: 'Rex', categoryId: 3 })
    const tom = await post(testApp, '/v1/pets', { name: 'Tom', categoryId: 2 }, { 'idempotency-key': 'k1' })
    await post(testApp, '/v1/pets', { name: 'Tom', categoryId: 2 }, { 'idempotency-key': 'k1' }) // a replay changes nothing
    const dogs = await post(testApp, '/v1/categories', { name: 'Dogs' })
    const [imported] = await testApp.store.pets.insertMany([{ name: 'Max', categoryId: 4n, status: 'sold' }])

    const order = await post(testApp, '/v1/store/orders', { petId: rex.id })
    const approved = await moveOrder(testApp, order.id, 'approved')
    const delivered = await moveOrder(testApp, order.id, 'delivered')
    const second = await post(testApp, '/v1/store/orders', { petId: tom.id })
    const cancelled = await moveOrder(testApp, second.id, 'cancelled')

    const events = await allEvents(testApp)
    assert.deepEqual(events.map(({ type, data }) => ({ type, data })), [
      { type: 'pet.created', data: rex },
      { type: 'pet.created', data: tom },
      { type: 'category.created', data: dogs },
      { type: 'pet.created', data: { id: Number(imported!.id), name: 'Max', categoryId: 4, status: 'sold' } },
      { type: 'order.placed', data: order },
      { type: 'pet.status_changed', data: { ...rex, status: 'pending', previousStatus: 'available' } },
      { type: 'order.approved', data: approved },
      { type: 'order.delivered', data: delivered },
      { type: 'pet.status_changed', data: { ...rex, status: 'sold', previousStatus: 'pending' } },
      { type: 'order.placed', data: second },
      { type: 'pet.status_changed', data: { ...tom, status: 'pending', previousStatus: 'available' } },
      { type: 'order.cancelled', data: cancelled },
      { type: 'pet.status_changed', data: { ...tom, status: 'available', previousStatus: 'pending' } }
    ])
    for (const [i, event] of events.entries()) {
      assert.match(event.occurredAt, RFC3339_UTC)
      if (i > 0) assert.ok(event.id > events[i - 1]!.id, 'ids increase')
    }
    const refused = await testApp.app.inject({ method: 'POST', url: '/v1/store/orders', headers: testApp.auth, payload: { petId: rex.id } })
    assert.equal(refused.statusCode, 409)
    assert.equal((await allEvents(testApp)).length, events.length, 'a refused change makes no event')
  })

  test('listEvents reads after an id, filters by one or several types, and pages with Link: rel="next"', async (t) => {
    const testApp = await build(t, { store })
    for (const name of ['A', 'B', 'C', 'D', 'E']) await createPet(testApp, { name, categoryId: 1 })
    await post(testApp, '/v1/categories', { name: 'Dogs' })
    const all = await allEvents(testApp)
    assert.equal(all.length, 6)

    const first = await testApp.app.inject({ url: '/v1/events?limit=2', headers: testApp.auth })
    assert.deepEqual(first.json(), all.slice(0, 2))
    assert.equal(first.headers['api-stability'], 'beta')
    assert.equal(first.headers.link, `</v1/events?after=${all[1]!.id}&limit=2>; rel="next"`)
    const after = await testApp.app.inject({ url: `/v1/events?after=${all[3]!.id}`, headers: testApp.auth })
    assert.deepEqual(after.json(), all.slice(4))
    assert.equal(after.headers.link, undefined, 'no link on the last page')
    assert.deepEqual(await allEvents(testApp, '&type=category.created'), all.filter((event) => event.type === 'category.created'))
    assert.deepEqual(await allEvents(testApp, '&type=category.created&type=pet.created'), all)
    const filtered = await testApp.app.inject({ url: '/v1/events?limit=1&type=pet.created&type=order.placed', headers: testApp.auth })
    assert.equal(filtered.headers.link, `</v1/events?after=${all[0]!.id}&limit=1&type=pet.created&type=order.placed>; rel="next"`, 'the next link keeps the filter')
    assert.deepEqual((await testApp.app.inject({ url: `/v1/events?after=${all[5]!.id}`, headers: testApp.auth })).json(), [])

    for (const query of ['type=pet.deleted', 'after=-1', 'after=abc', 'limit=0', 'limit=1001', 'type=', 'since=1']) {
      const bad = await testApp.app.inject({ url: `/v1/events?${query}`, headers: testApp.auth })
      assert.equal(bad.statusCode, 400, query)
      assert.equal(errorOf(bad).code, 'validation_failed', query)
    }
  })

  test('a type rare in a long log is read in steps: its pages hold the same events, with Link: rel="next" exactly while more follow', async (t) => {
    const testApp = await build(t, { store, limits: { eventReadStepIds: 50 } })
    const pets = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const }))
    // Categories at the log's start, in its middle, and in the last step before its end; a step's worth of other events after them.
    const names = ['First', 'Middle', 'Last']
    for (const [i, name] of names.entries()) {
      await post(testApp, '/v1/categories', { name })
      await testApp.store.pets.insertMany(pets([520, 499, 60][i]!))
    }
    const byOne: string[] = []
    let url: string | undefined = '/v1/events?type=category.created&limit=1'
    while (url !== undefined) {
      const page: LightMyRequestResponse = await testApp.app.inject({ url, headers: testApp.auth })
      byOne.push(...page.json().map((event: ListedEvent) => event.data.name))
      url = nextLink(page.headers.link)
    }
    assert.deepEqual(byOne, names, 'one a page, and no page past the last')
    assert.deepEqual((await allEvents(testApp, '&type=category.created')).map((event) => event.data.name), names)
    const all = await allEvents(testApp)
    assert.equal(all.length, 3 + 520 + 499 + 60)
    assert.deepEqual(all.map((event) => event.id), [...all.map((event) => event.id)].sort((a, b) => a - b))
    const twoAfterFirst = await testApp.app.inject({ url: `/v1/events?type=category.created&limit=2&after=${all[0]!.id}`, headers: testApp.auth })
    assert.deepEqual(twoAfterFirst.json().map((event: ListedEvent) => event.data.name), ['Middle', 'Last'])
    assert.equal(nextLink(twoAfterFirst.headers.link), undefined)
  })

  test('a page read in steps from the first event kept has no gap where events were deleted for their age meanwhile, and walks none of the deleted part of the log', async (t) => {
    // Events written here with no resource in them: their answers are not those of the OpenAPI document.
    const testApp = await build(t, { store, limits: { eventReadStepIds: 10 }, answersChecked: false })
    // A category event every 10 ids among pet events; while the page is read (10 ids a turn), the oldest
    // are deleted, 30 a turn: the deletion overtakes the read.
    const occurredAt = new Date().toISOString()
    await testApp.db.insertInto('events').values(Array.from({ length: 1000 }, (_, i) => ({ type: i % 10 === 4 ? 'category.created' : 'pet.created', occurred_at: occurredAt, data: '{}' }))).execute()
    let deleting = true
    const deletion = (async () => {
      for (let through = 30n; deleting && through <= 600n; through += 30n) {
        await pruneEvents(testApp.db, through, 30)
        await new Promise((resolve) => { setImmediate(resolve) })
      }
    })()
    const pages = await Promise.all(Array.from({ length: 5 }, async () => (await testApp.app.inject({ url: '/v1/events?type=category.created&limit=20', headers: testApp.auth })).json() as ListedEvent[]))
    deleting = false
    await deletion
    for (const page of pages) {
      const ids = page.map((event) => event.id)
      assert.deepEqual(ids, ids.map((_id, i) => ids[0]! + 10 * i), `a gap in ${ids.join()}`)
    }

    // A log whose first 50,000,000 ids were deleted: read from 0 a step of 10 at a time, its first page took 5,000,000 reads.
    await testApp.db.deleteFrom('events').execute()
    await testApp.db.updateTable('settings').set({ value: '50000000' }).where('name', '=', 'events_pruned_through').execute()
    await testApp.db.insertInto('events').values({ id: 50_000_001n, type: 'category.created', occurred_at: new Date().toISOString(), data: '{}' }).execute()
    const read = testApp.app.inject({ url: '/v1/events?type=category.created', headers: testApp.auth })
    let timer: NodeJS.Timeout | undefined
    const first = await Promise.race([read, new Promise<undefined>((resolve) => { timer = setTimeout(() => { resolve(undefined) }, 5000) })])
    clearTimeout(timer)
    assert.ok(first !== undefined, 'no first page within 5 s: the read walked the deleted ids')
    assert.deepEqual(first.json().map((event: ListedEvent) => event.id), [50_000_001])
  })

  test('a page read in steps lets the event loop turn between its reads, each bounded but the last', async (t) => {
    const testApp = await build(t, { store })
    await testApp.store.pets.insertMany(Array.from({ length: 1000 }, (_, i) => ({ name: `Pet ${i}`, categoryId: 1n, status: 'available' as const })))
    const { db, reads } = noteLogReads(t, testApp.db)
    const { events, more } = await findEventsInSteps(db, { afterId: 0n, types: ['order.placed'], limit: 10 }, 100)
    assert.deepEqual([events, more], [[], false])
    const steps = Math.ceil(Number(await findLastEventId(testApp.db)) / 100)
    assert.ok(steps >= 10)
    assert.equal(reads.length, steps, JSON.stringify(reads))
    assert.deepEqual(reads.map(({ bounded }) => bounded), [...Array(steps - 1).fill(true), false])
    assert.ok(reads.every(({ turn }, i) => i === 0 || turn > reads[i - 1]!.turn), `a turn between reads: ${JSON.stringify(reads)}`)
  })

  test('events older than EVENT_RETENTION_DAYS are pruned; reading after a pruned id is 410 events_expired naming the oldest kept', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, clock, env: { EVENT_RETENTION_DAYS: '30' } })
    for (const name of ['Old 1', 'Old 2']) await createPet(testApp, { name, categoryId: 1 })
    clock.advance(29 * DAY_MS)
    await createPet(testApp, { name: 'Young', categoryId: 1 })
    clock.advance(2 * DAY_MS)
    assert.equal(await pruneExpiredEvents(testApp.db, clock, 30), 2)
    assert.equal(await pruneExpiredEvents(testApp.db, clock, 30), 0, 'nothing more is old enough')

    const [young] = await allEvents(testApp)
    assert.equal(young!.data.name, 'Young')
    for (const after of [0, young!.id - 2]) {
      const expired = await testApp.app.inject({ url: `/v1/events?after=${after}`, headers: testApp.auth })
      assert.deepEqual(errorOf(expired), {
        code: 'events_expired',
        status: 410,
        message: `Events after ${after} are no longer kept (events are kept 30 days); the oldest kept is ${young!.id}: read the current state, then continue with after=${young!.id - 1}`
      })
    }
    const resumed = await testApp.app.inject({ url: `/v1/events?after=${young!.id - 1}`, headers: testApp.auth })
    assert.deepEqual(resumed.json(), [young])

    // Another instance's pruning went further meanwhile: what this one records never moves it back.
    await testApp.db.updateTable('settings').set({ value: '1000' }).where('name', '=', 'events_pruned_through').execute()
    clock.advance(31 * DAY_MS)
    assert.equal(await pruneExpiredEvents(testApp.db, clock, 30), 1)
    assert.equal((await testApp.db.selectFrom('settings').select('value').where('name', '=', 'events_pruned_through').executeTakeFirstOrThrow()).value, '1000')
  })

  test('a retention of one day is said in words: "kept 1 day"', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, clock, env: { EVENT_RETENTION_DAYS: '1' } })
    await createPet(testApp, { name: 'Old', categoryId: 1 })
    clock.advance(2 * DAY_MS)
    assert.equal(await pruneExpiredEvents(testApp.db, clock, 1), 1)
    const expired = await testApp.app.inject({ url: '/v1/events?after=0', headers: testApp.auth })
    assert.match(errorOf(expired).message, /\(events are kept 1 day\); no event is kept now/)
  })

  test('a position past the newest event written (another store\'s, or one restored from a backup) is a 400 naming the newest, on the feed and the stream', async (t) => {
    const clock = manualClock()
    const testApp = await build(t, { store, clock, env: { EVENT_RETENTION_DAYS: '30' } })
    const pastNewest = async (after: bigint, newest: bigint) => {
      const message = `\`after\` ${after} is past the newest event written (${newest}): it is no position in this store's event log (another store's, or one restored from a backup); read the current state, then continue with after=${newest}`
      const feed = await testApp.app.inject({ url: `/v1/events?after=${after}`, headers: testApp.auth })
      assert.deepEqual(errorOf(feed), { code: 'validation_failed', status: 400, message })
      for (const position of [{ url: `/v1/events/stream?after=${after}` }, { url: '/v1/events/stream', headers: { 'last-event-id': String(after) } }]) {
        const stream = await testApp.app.inject({ url: position.url, headers: { ...testApp.auth, ...position.headers } })
        assert.deepEqual(errorOf(stream), { code: 'validation_failed', status: 400, message: message.replace('`after`', position.headers === undefined ? '`after`' : '`Last-Event-ID`') })
      }
    }
    await pastNewest(1n, 0n)
    await createPet(testApp, { name: 'Rex', categoryId: 1 })
    const [rex] = await allEvents(testApp)
    const newest = BigInt(rex!.id)
    await pastNewest(newest + 1n, newest)
    await pastNewest(9223372036854775807n, newest)
    const atNewest = await testApp.app.inject({ url: `/v1/events?after=${newest}`, headers: testApp.auth })
    assert.deepEqual(atNewest.json(), [])
    assert.equal(atNewest.statusCode, 200)

    // Every event pruned: the newest written is the last one deleted.
    clock.advance(31 * DAY_MS)
    assert.equal(await pruneExpiredEvents(testApp.db, clock, 30), 1)
    assert.equal((await testApp.app.inject({ url: `/v1/events?after=${newest}`, headers: testApp.auth })).statusCode, 200)
    await pastNewest(newest + 1n, newest)
  })

  test('with changes committing concurrently on two instances, a reader polling after its last id misses none', async (t) => {
    // The reader polls as fast as it can.
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '0' } })
    const second = openTestStore(t, testApp.config.DATABASE_URL, { poolSize: 4 })
    const other = await buildApp({ config: testApp.config, store: second, limits: TEST_LIMITS })
    defer(t, () => other.close())
    checkAnswers(t, other)
    const { key } = await createKey(testApp.db, 'second')
    const instances = [testApp.app, other]
    const headers = [testApp.auth, { authorization: `Bearer ${key}` }]

    let writing = true
    const writers = Array.from({ length: 8 }, async (_, writer) => {
      const app = instances[writer % 2]!
      for (let i = 0; i < 12; i++) {
        const created = await app.inject({ method: 'POST', url: '/v1/pets', headers: headers[writer % 2], payload: { name: `w${writer} #${i}`, categoryId: 1 } })
        assert.equal(created.statusCode, 201)
        if (i % 2 === 0) {
          const placed = await app.inject({ method: 'POST', url: '/v1/store/orders', headers: headers[writer % 2], payload: { petId: created.json().id } })
          assert.equal(placed.statusCode, 201)
        }
      }
    })
    const seen: number[] = []
    const reader = (async () => {
      let after = 0
      for (;;) {
        const done = !writing
        const page = await other.inject({ url: `/v1/events?after=${after}&limit=7`, headers: headers[1] })
        assert.equal(page.statusCode, 200, page.body)
        const ids: number[] = page.json().map((event: ListedEvent) => event.id)
        seen.push(...ids)
        if (ids.length > 0) after = ids.at(-1)!
        else if (done) return
        // inject() can answer without leaving the microtask queue: let the group commits run.
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    try {
      await Promise.all(writers)
    } finally {
      writing = false
      await reader
    }
    const all = (await allEvents(testApp)).map((event) => event.id)
    assert.equal(all.length, 8 * 12 + 8 * 6 * 2)
    assert.deepEqual(seen, all, 'the reader saw every event once, in order')
  })
})
