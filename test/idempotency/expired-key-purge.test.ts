import assert from 'node:assert/strict'
import { test } from 'node:test'
import { purgeExpiredKeys } from '../../src/idempotency/expired-key-purge.js'
import { IDEMPOTENCY_RETENTION_MS } from '../../src/idempotency/idempotent-create.js'
import { createTestStore, forEachStore, manualClock } from '../helper.js'

forEachStore((store) => {
  test('expired idempotency keys are purged in batches until none is left; younger ones stay', async (t) => {
    const { db } = await createTestStore(t, store)
    const clock = manualClock()
    const at = (ms: number) => new Date(clock.now() - ms).toISOString()
    const record = (key: string, createdAt: string) => ({
      api_key_id: 1n, key, request_hash: 'h', status_code: 201, response_body: '{}', location: null, created_at: createdAt
    })
    const expired = Array.from({ length: 2500 }, (_, i) => record(`old-${i}`, at(IDEMPOTENCY_RETENTION_MS + 1000 + i)))
    for (let start = 0; start < expired.length; start += 500) await db.insertInto('idempotency_keys').values(expired.slice(start, start + 500)).execute()
    await db.insertInto('idempotency_keys').values([record('young', at(IDEMPOTENCY_RETENTION_MS - 1000)), record('new', at(0))]).execute()

    assert.equal(await purgeExpiredKeys(db, clock), 2500)
    const left = await db.selectFrom('idempotency_keys').select('key').orderBy('key').execute()
    assert.deepEqual(left.map(({ key }) => key), ['new', 'young'])

    clock.advance(2000) // 'young' is now past the retention time
    assert.equal(await purgeExpiredKeys(db, clock), 1)
    assert.equal(await purgeExpiredKeys(db, clock), 0)
  })
})
