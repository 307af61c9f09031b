import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const SRC = fileURLToPath(new URL('../../src', import.meta.url))

test('better-sqlite3 is named only under src/store/sqlite/: nothing outside the SQLite store touches it', () => {
  const naming = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && readFileSync(join(SRC, file), 'utf8').includes('better-sqlite3'))
  assert.ok(naming.length > 0, 'the SQLite store uses it')
  assert.deepEqual(naming.filter((file) => !file.startsWith(join('store', 'sqlite'))), [])
})
