// The WAL checkpoint thread's entry point (see WalCheckpointer): copies committed pages from the WAL
// into the database file every tenth of a second, on a connection of its own, until ended (WalCheckpointer.close).
import SqliteDatabase from 'better-sqlite3'
import { parentPort, workerData } from 'node:worker_threads'

const { path, intervalMs } = workerData as { path: string, intervalMs: number }
const port = parentPort!
const sqlite = new SqliteDatabase(path)
let failing = false

// PASSIVE waits for no one: it copies what no reader still needs, and writers go on meanwhile.
setInterval(() => {
  try {
    sqlite.pragma('wal_checkpoint(PASSIVE)')
    failing = false
  } catch (error) {
    // Reported once per run of failures; the next turn tries again.
    if (!failing) port.postMessage({ message: String((error as Error).message), code: (error as { code?: unknown }).code })
    failing = true
  }
}, intervalMs)
