import { closeSync, existsSync, linkSync, openSync, rmSync, unlinkSync } from 'node:fs'
import { dirname } from 'node:path'
import { ConfigError } from '../../config.js'
import { messageOf } from '../../error-message.js'
import { isUnusableSqlitePath } from '../store-errors.js'
import { makeFolder } from './make-folder.js'
import { SqliteConnection } from './sqlite-connection.js'

/**
 * Copies the SQLite store at `path` to the new file `destination`, as committed at one moment, while
 * the service may be writing to it (see SqliteConnection.backup), and returns how many pets the copy
 * holds. The copy is made under a `.partial` name beside `destination` (its folder made if need be),
 * a file made only if none is there: two backups to one name at once would write one copy, and one
 * name each would hide which failed. It is checked (SQLite's `quick_check`), then given its name: a
 * backup cut short or damaged leaves no file that looks whole, and one made meanwhile under that name
 * is never replaced (a link fails where a rename would replace it).
 */
export async function backupSqliteStore (path: string, destination: string): Promise<{ pets: bigint }> {
  const partial = `${destination}.partial`
  const source = openStoreToCopy(path)
  try {
    const folder = dirname(destination)
    try {
      makeFolder(folder)
    } catch (error) {
      // A path that cannot be a folder here is a name to change (exit 2); a disk that fails is not.
      throw new (isUnusableSqlitePath(error) ? ConfigError : Error)(`Cannot make the folder ${folder} for the copy: ${messageOf(error)}`, { cause: error })
    }
    try {
      closeSync(openSync(partial, 'wx'))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      throw new ConfigError(`${partial} exists: another backup to ${destination} is running, or one stopped and left its copy; once none runs, remove it and back up again`, { cause: error })
    }
    try {
      await source.backup(partial)
    } catch (error) {
      rmSync(partial, { force: true }) // this backup's own, of no use: a second try makes it again
      throw new Error(`Cannot write the copy ${partial}: ${messageOf(error)}`, { cause: error })
    }
  } finally {
    source.close()
  }
  const copy = new SqliteConnection(partial, 'default', { queryOnly: true })
  let pets: bigint
  try {
    const [check] = copy.query<{ quick_check: string }>('pragma quick_check')
    if (check?.quick_check !== 'ok') throw new Error(`The copy ${partial} fails SQLite's check (${check?.quick_check}): it was kept for a look, not named ${destination}`)
    pets = copy.query<{ count: bigint }>('select count(*) as count from pets')[0]!.count
  } finally {
    copy.close()
  }
  // Closed, SQLite removes the copy's -wal and -shm files; one left would not follow it.
  if (existsSync(`${partial}-wal`) || existsSync(`${partial}-shm`)) throw new Error(`The copy ${partial} kept its -wal or -shm file: it was not named ${destination}`)
  linkSync(partial, destination)
  unlinkSync(partial)
  return { pets }
}

/**
 * The store at `path`, opened to be copied once it is known to be one: a file that is no SQLite
 * database, or no store of the service's (no pets table), is refused as a setting to change (exit 2)
 * before any copy is begun, naming the file, which SQLite's own words do not.
 */
function openStoreToCopy (path: string): SqliteConnection {
  let source: SqliteConnection | undefined
  let holdsPets: boolean
  try {
    source = new SqliteConnection(path, 'default', { queryOnly: true })
    holdsPets = source.query("select 1 from sqlite_schema where type = 'table' and name = 'pets'").length > 0
  } catch (error) {
    source?.close()
    throw new (isUnusableSqlitePath(error) ? ConfigError : Error)(`Cannot back up the SQLite store at ${path}: ${messageOf(error)}`, { cause: error })
  }
  if (holdsPets) return source
  source.close()
  throw new ConfigError(`Cannot back up the SQLite store at ${path}: it holds no pets table`)
}
