import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setImmediate } from 'node:timers/promises'
import type { KyselyPlugin } from 'kysely'
import { generateApiKey } from '../../src/api-keys/api-key.service.js'
import { ApiKeyVerifier, type KeyCheck } from '../../src/api-keys/api-key.verifier.js'
import { revokeApiKey } from '../../src/api-keys/api-key.repository.js'
import { systemClock } from '../../src/clock.js'
import { createKey, createTestStore, defer, forEachStore, manualClock } from '../helper.js'

function idOf (check: KeyCheck): bigint | string | undefined {
  return typeof check === 'object' ? check.id : check
}

/** Counts the SELECTs run through the Kysely instance it is added to: the verifier's only ones are key lookups. */
function countSelects (): KyselyPlugin & { count: number } {
  return {
    count: 0,
    transformQuery (args) {
      if (args.node.kind === 'SelectQueryNode') this.count++
      return args.node
    },
    transformResult: async (args) => args.result
  }
}

forEachStore((store) => {
  test('checks of a key that arrive together share one store query; a cached key needs none', async (t) => {
    const { db: storeDb } = await createTestStore(t, store)
    const lookups = countSelects()
    const db = storeDb.withPlugin(lookups)
    const { id, key } = await createKey(db)
    const verifier = new ApiKeyVerifier(db, systemClock, { cacheTtlMs: 60_000, cacheMax: 10, usageFlushMs: 60_000 })
    defer(t, () => verifier.close())

    assert.deepEqual((await Promise.all(Array.from({ length: 20 }, () => verifier.verify(key)))).map(idOf), Array(20).fill(id))
    assert.equal(lookups.count, 1)
    assert.equal(idOf(await verifier.verify(key)), id)
    assert.equal(lookups.count, 1, 'cached')

    // A key the store does not hold is not kept: each moment asks again.
    const { key: unknown } = generateApiKey()
    assert.deepEqual(await Promise.all([verifier.verify(unknown), verifier.verify(unknown)]), [undefined, undefined])
    assert.equal(lookups.count, 2)
    assert.equal(await verifier.verify(unknown), undefined)
    assert.equal(lookups.count, 3)
  })

  test('a revoked key is refused once its cache entry expires, and not before: 2 s elapsed, whatever step the time of day takes (NTP, a VM resumed)', async (t) => {
    const { db } = await createTestStore(t, store)
    const clock = manualClock()
    const { id, key } = await createKey(db)
    const verifier = new ApiKeyVerifier(db, clock, { cacheTtlMs: 2000, cacheMax: 10, usageFlushMs: 60_000 })
    defer(t, () => verifier.close())
    assert.equal(idOf(await verifier.verify(key)), id)
    assert.equal(await revokeApiKey(db, id, systemClock), 'revoked')
    // A step back of an hour kept it cached for the hour.
    clock.step(-3_600_000)
    clock.advance(1999)
    assert.equal(idOf(verifier.verifyCached(key)), id, 'still cached')
    clock.advance(2)
    assert.equal(verifier.verifyCached(key), undefined, 'expired from the cache')
    assert.equal(await verifier.verify(key), undefined)
  })

  test('last-used times that could not be written are written by the next flush', async (t) => {
    const { db: storeDb } = await createTestStore(t, store)
    let failing = false
    const db = storeDb.withPlugin({
      transformQuery (args) {
        if (failing && args.node.kind === 'UpdateQueryNode') throw new Error('the store is down')
        return args.node
      },
      transformResult: async (args) => args.result
    })
    const { id, key } = await createKey(db)
    const verifier = new ApiKeyVerifier(db, systemClock, { cacheTtlMs: 60_000, cacheMax: 10, usageFlushMs: 60_000 })
    defer(t, () => verifier.close())
    assert.equal(idOf(await verifier.verify(key)), id)
    failing = true
    await assert.rejects(verifier.flushUsage(), /the store is down/)
    failing = false
    await verifier.flushUsage()
    const { last_used_at: lastUsed } = await db.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow()
    assert.ok(lastUsed !== null && Date.now() - Date.parse(lastUsed) < 60_000, 'kept and written')
  })

  test('closing waits for the flush under way: the times it could not write are written by the last one', async (t) => {
    const { db: storeDb } = await createTestStore(t, store)
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    let updates = 0
    // The periodic flush's first write is held until the verifier is closing, and its second fails.
    const db = storeDb.withPlugin({
      transformQuery (args) {
        if (args.node.kind === 'UpdateQueryNode' && ++updates === 2) throw new Error('the store is down')
        return args.node
      },
      transformResult: async (args) => {
        if (updates === 1) await held
        return args.result
      }
    })
    const keys = [await createKey(db, 'first'), await createKey(db, 'second')]
    const verifier = new ApiKeyVerifier(db, systemClock, { cacheTtlMs: 60_000, cacheMax: 10, usageFlushMs: 60_000 })
    defer(t, () => verifier.close())
    for (const { id, key } of keys) assert.equal(idOf(await verifier.verify(key)), id)
    const periodic = verifier.flushUsage()
    const closing = verifier.close()
    await setImmediate()
    release()
    await assert.rejects(periodic, /the store is down/)
    await closing
    const written = await db.selectFrom('api_keys').select(['name', 'last_used_at']).orderBy('id').execute()
    assert.deepEqual(written.map(({ name, last_used_at: lastUsed }) => [name, lastUsed !== null]), [['first', true], ['second', true]])
  })
})
