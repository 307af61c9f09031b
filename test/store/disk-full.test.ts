import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { closeSync, openSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import SqliteDatabase from 'better-sqlite3'
import { openStore } from '../../src/store/open-store.js'
import { isStoreUnavailable } from '../../src/store/store-errors.js'
import { build, createPet, defer, errorOf, tempDir } from '../helper.js'

/** Writes zeros into `path` until the file system has not one byte left. */
function fillUp (path: string): void {
  const fd = openSync(path, 'w')
  try {
    for (const size of [64 * 1024, 4096, 512, 1]) {
      const chunk = Buffer.alloc(size)
      try {
        for (;;) writeSync(fd, chunk)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
      }
    }
  } finally {
    closeSync(fd)
  }
}

// A file system of its own, filled to the brim: tests and CI run as root, so the test mounts a tmpfs.
test('on a full disk every write path answers 503 (or fails as unavailable), and writes resume once space is freed', { timeout: 30_000 }, async (t) => {
  const dir = tempDir(t)
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dir])
  defer(t, () => execFileSync('umount', ['-l', dir]))
  const testApp = await build(t, { store: { name: 'sqlite', databaseUrl: async () => `sqlite:${join(dir, 'petstore.db')}` } })
  const pets = [await createPet(testApp, { name: 'Rex', categoryId: 1 }), await createPet(testApp, { name: 'Tom', categoryId: 1 })]
  // A checkpointed WAL would be written over from its start, in space it already holds: empty it first,
  // so that every write needs new space.
  const sqlite = new SqliteDatabase(join(dir, 'petstore.db'))
  const [checkpoint] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>
  sqlite.close()
  assert.equal(checkpoint!.busy, 0, 'the WAL was emptied')
  const filler = join(dir, 'filler')
  fillUp(filler)

  // Big names, so that each write needs new pages, never only room left in a page.
  const name = 'x'.repeat(100)
  const writes = (i: number) => [
    { method: 'POST' as const, url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 1 } },
    { method: 'POST' as const, url: '/v1/pets', headers: { ...testApp.auth, 'idempotency-key': `full-${i}` }, payload: { name, categoryId: 2 } },
    { method: 'POST' as const, url: '/v1/store/orders', headers: testApp.auth, payload: { petId: pets[i]!.id } }
  ]
  for (const request of writes(0)) {
    const response = await testApp.app.inject(request)
    assert.equal(response.statusCode, 503, `${request.url}: ${response.body}`)
    assert.equal(errorOf(response).code, 'service_unavailable')
    assert.equal(response.headers['retry-after'], '1')
  }
  const many = Array.from({ length: 500 }, (_, i) => ({ name: `${name}${i}`, categoryId: 3n, status: 'available' as const }))
  await assert.rejects(testApp.store.pets.insertMany(many), (error) => isStoreUnavailable(error), 'an import fails as unavailable')

  rmSync(filler)
  for (const request of writes(1)) {
    const response = await testApp.app.inject(request)
    assert.equal(response.statusCode, 201, `${request.url}: ${response.body}`)
  }
  assert.equal((await testApp.store.pets.insertMany(many)).length, 500)
})

test('a store that cannot be opened for a full disk says the disk is full, where SQLite says "disk I/O error"', { timeout: 30_000 }, async (t) => {
  const dir = tempDir(t)
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir])
  defer(t, () => execFileSync('umount', ['-l', dir]))
  const path = join(dir, 'petstore.db')
  await openStore(`sqlite:${path}`).close()
  fillUp(join(dir, 'filler'))
  assert.throws(() => openStore(`sqlite:${path}`), (error: Error) => {
    assert.match(error.message, new RegExp(`^Cannot open the SQLite store at ${path}: .*; the disk it is on is full \\(less than 1 MiB left in ${dir}\\)$`))
    return true
  })
  rmSync(join(dir, 'filler'))
  await openStore(`sqlite:${path}`).close()
})
