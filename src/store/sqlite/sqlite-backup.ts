import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { SqliteConnection } from './sqlite-connection.js'

/**
 * Copies the SQLite store at `path` to the new file `destination`, as committed at one moment, while
 * the service may be writing to it (see SqliteConnection.backup), and returns how many pets the copy
 * holds. The copy is made under a `.partial` name beside `destination`, checked (SQLite's
 * `quick_check`) and then renamed (its folder made if need be): a backup cut short or damaged leaves no file that looks whole.
 */
export async function backupSqliteStore (path: string, destination: string): Promise<{ pets: bigint }> {
  const partial = `${destination}.partial`
  mkdirSync(dirname(destination), { recursive: true })
  rmSync(partial, { force: true }) // left by a backup cut short
  const source = new SqliteConnection(path, 'default', { queryOnly: true })
  try {
    await source.backup(partial)
  } finally {
    source.close()
  }
  const copy = new SqliteConnection(partial, 'default', { queryOnly: true })
  let pets: bigint
  try {
    const [check] = copy.query<{ quick_check: string }>('pragma quick_check')
    if (check?.quick_check !== 'ok') throw new Error(`The copy ${partial} fails SQLite's check (${check?.quick_check}): it was kept for a look, not renamed`)
    pets = copy.query<{ count: bigint }>('select count(*) as count from pets')[0]!.count
  } finally {
    copy.close()
  }
  // Closed, SQLite removes the copy's -wal and -shm files; one left would not follow the rename.
  if (existsSync(`${partial}-wal`)) throw new Error(`The copy ${partial} kept its write-ahead log: it was not renamed`)
  renameSync(partial, destination)
  return { pets }
}
