import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { buildApp, DISPATCHER_OUTAGE } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { createLogger } from '../../src/logger.js'
import { createCuttableProxy } from '../cuttable-proxy.js'
import { checkAnswers, createKey, defer, errorOf, openTestStore, TEST_LIMITS, TEST_STORES } from '../helper.js'

const REPORT_MS = 100

// Only PostgreSQL is reached over a network; an embedded SQLite store has no outage to survive.
for (const store of TEST_STORES.filter((candidate) => candidate.name === 'postgres')) {
  test('while PostgreSQL is unreachable: 503 with the Error body, an outage logged in a few lines, then recovery without a restart', async (t) => {
    const direct = new URL(await store.databaseUrl(t))
    const proxy = await createCuttableProxy(direct)
    defer(t, () => proxy.close())
    const viaProxyStore = openTestStore(t, proxy.url, { poolSize: 2 })
    const { db } = viaProxyStore
    await migrateToLatest(db)
    const logLines: Array<{ level: number, msg: string, kind?: string, failures?: number, err?: { message: string } }> = []
    const logger = createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { logLines.push(JSON.parse(String(line))); done() } }))
    const app = await buildApp({
      config: loadConfig({ DATABASE_URL: proxy.url }),
      store: viaProxyStore,
      logger,
      verifierOptions: { cacheTtlMs: 1, cacheMax: 10, usageFlushMs: 60_000 },
      // Polled often, so that the webhook dispatcher fails many times while the store is cut.
      limits: { ...TEST_LIMITS, webhookPollMs: 10 },
      outageReportMs: REPORT_MS
    })
    defer(t, () => app.close())
    checkAnswers(t, app)
    const headers = { authorization: `Bearer ${(await createKey(db)).key}` }
    const created = await app.inject({ method: 'POST', url: '/v1/pets', headers, payload: { name: 'Rex', categoryId: 1 } })
    assert.equal(created.statusCode, 201)

    proxy.cut()
    const health = await app.inject({ url: '/readyz' })
    assert.equal(health.statusCode, 503)
    assert.equal(errorOf(health).code, 'service_unavailable')
    for (const request of [{ url: '/v1/pets', headers }, { url: `/v1/pets/${created.json().id}`, headers },
      { method: 'POST' as const, url: '/v1/pets', headers, payload: { name: 'Lost', categoryId: 1 } }]) {
      const response = await app.inject(request)
      assert.equal(response.statusCode, 503, `${request.url}: ${response.body}`)
      assert.equal(errorOf(response).code, 'service_unavailable')
      assert.equal(response.headers['retry-after'], '1')
    }

    const more = await Promise.all(Array.from({ length: 40 }, async () => await app.inject({ url: '/v1/pets', headers })))
    assert.ok(more.every((response) => response.statusCode === 503))
    await sleep(REPORT_MS * 1.5)

    proxy.restore()
    assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
    await sleep(REPORT_MS * 3.5)
    // The dispatcher's failures, once a poll: logged as one outage too.
    const dispatcher = logLines.filter((line) => line.kind === DISPATCHER_OUTAGE)
    const levels = dispatcher.map((line) => line.level).join(' ')
    // As many counts as intervals the outage lasted: more on a loaded machine (5 seen in CI), never one a failure.
    assert.match(levels, /^50( 40){1,8} 30$/, 'its first failure, counts every interval, its recovery')
    assert.ok(dispatcher[0]!.err?.message !== undefined)
    assert.ok(dispatcher.reduce((sum, line) => sum + (line.failures ?? 0), 0) > dispatcher.length, 'more failures than lines')
    // 44 answers of 503, logged as: the first of each kind with its cause, counts, recoveries.
    const outage = logLines.filter((line) => line.kind !== undefined && line.kind !== DISPATCHER_OUTAGE)
    const firsts = outage.filter((line) => line.level === 50)
    const kinds = new Set(firsts.map((line) => line.kind))
    assert.ok(firsts.length >= 1 && firsts.length <= 3, `first failures: ${JSON.stringify(firsts.map((line) => line.kind))}`)
    assert.ok(firsts.every((line) => line.err?.message !== undefined), 'each with its cause')
    const counted = outage.filter((line) => line.level === 40).reduce((sum, line) => sum + line.failures!, 0)
    assert.equal(firsts.length + counted, 44, 'every 503 is counted')
    assert.deepEqual(new Set(outage.filter((line) => line.level === 30).map((line) => line.kind)), kinds, 'each kind recovers')
    assert.ok(outage.length <= kinds.size * 4, `${outage.length} outage lines`)
    assert.equal(logLines.filter((line) => line.msg === 'request failed').length, 0, 'no line per request')

    const list = await app.inject({ url: '/v1/pets', headers })
    assert.equal(list.statusCode, 200)
    assert.deepEqual(list.json(), [created.json()], 'nothing half-written during the outage')
  })
}
