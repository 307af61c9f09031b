import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generateApiKey } from '../../src/api-keys/api-key.service.js'
import { ApiKeyVerifier } from '../../src/api-keys/api-key.verifier.js'
import { createDb } from '../../src/db/create-db.js'
import { createKey, createTestDb, defer, forEachStore } from '../helper.js'

forEachStore((store) => {
  test('checks of a key that arrive together share one store query; a cached key needs none', async (t) => {
    const { databaseUrl } = await createTestDb(t, store)
    const keyLookups: string[] = []
    const db = createDb(databaseUrl, 4, 'default', (event) => {
      if (/select .* from "api_keys"/.test(event.query.sql)) keyLookups.push(event.query.sql)
    })
    defer(t, () => db.destroy())
    const { id, key } = await createKey(db)
    const verifier = new ApiKeyVerifier(db, { cacheTtlMs: 60_000, cacheMax: 10, usageFlushMs: 60_000 })
    defer(t, () => verifier.close())

    assert.deepEqual(await Promise.all(Array.from({ length: 20 }, () => verifier.verify(key))), Array(20).fill(id))
    assert.equal(keyLookups.length, 1)
    assert.equal(await verifier.verify(key), id)
    assert.equal(keyLookups.length, 1, 'cached')

    // A key the store does not hold is not kept: each moment asks again.
    const { key: unknown } = generateApiKey()
    assert.deepEqual(await Promise.all([verifier.verify(unknown), verifier.verify(unknown)]), [undefined, undefined])
    assert.equal(keyLookups.length, 2)
    assert.equal(await verifier.verify(unknown), undefined)
    assert.equal(keyLookups.length, 3)
  })
})
