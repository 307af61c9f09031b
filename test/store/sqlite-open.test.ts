import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { test } from 'node:test'
import { openStore } from '../../src/store/open-store.js'
import { tempDir } from '../helper.js'

// Another instance starting beside it (migrating, switching the file to WAL) held it past the 100 ms
// a request waits: the second instance failed to start with "database is locked".
test('opening a SQLite store waits for another process holding the file a while, as an instance starting beside it does', async (t) => {
  const path = join(tempDir(t), 'petstore.db')
  const holder = spawn(process.execPath, ['-e', `
    const db = new (require('better-sqlite3'))(${JSON.stringify(path)})
    db.exec('create table held (n integer)')
    db.exec('begin exclusive')
    db.exec('insert into held values (1)')
    process.stdout.write('held\\n')
    setTimeout(() => { db.exec('commit'); db.close() }, 400)
  `], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.after(() => holder.kill())
  const exited = once(holder, 'exit')
  await once(holder.stdout, 'data')
  const store = openStore(`sqlite:${path}`)
  try {
    assert.equal(store.dialect, 'sqlite')
  } finally {
    await store.close()
  }
  const [code] = await exited
  assert.equal(code, 0)
})
