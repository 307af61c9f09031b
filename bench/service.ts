// What every benchmark shares: the store, the service as users start it, and what a process costs.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'

export const POSTGRES = process.argv.includes('--postgres')
export const CLI = 'dist/petstore.mjs'
// The service as `npm start` and the `petstore` command start it: the bundle, through its #! line.
const SERVICE = [CLI, 'serve']
// Defaults on, as deployed: rate limiting (at a limit no run reaches, so nothing is refused) and metrics.
export const DEFAULTS_ON = { RATE_LIMIT_PER_MINUTE: '1000000000', METRICS_PORT: '0' }

export const run = promisify(execFile)
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

export interface BenchStore {
  /** The store to seed. */
  databaseUrl: string
  /**
   * A new copy of the store as it is now (seeded), replacing the copy of that name made before: each
   * round of the benchmark starts from the store as seeded. On the one store, a round's creates grew it
   * for the next (by some 700,000 pets a round on a fast box), so the last round measured a store of
   * millions and the first one of 10,000, and the rows run last, larger stores than those run first.
   * Each instance of a round has a copy of its own (`name`): on one PostgreSQL database, the idle
   * instances heard every group of creates of the loaded one (a notification each, see
   * PostgresChangeFeed), and two of them cost it a fifth of its creates a second, against a twentieth
   * on a database of their own (docs/benchmarks.md, 2 December 12:20); on one SQLite file, their
   * checkpoint threads worked on its writes.
   */
  freshCopy: (name: string) => Promise<string>
  drop: () => Promise<void>
}

export async function createStore (dir: string): Promise<BenchStore> {
  if (!POSTGRES) {
    const seeded = join(dir, 'bench.db')
    return {
      databaseUrl: `sqlite:${seeded}`,
      freshCopy: async (copyName) => {
        const copy = join(dir, `${copyName}.db`)
        for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true })
        // No process has the seeded store open now: the file and its WAL, if one is left, are all of it.
        copyFileSync(seeded, copy)
        if (existsSync(`${seeded}-wal`)) copyFileSync(`${seeded}-wal`, `${copy}-wal`)
        return `sqlite:${copy}`
      },
      drop: async () => {}
    }
  }
  const adminUrl = process.env.TEST_DATABASE_URL
  if (!adminUrl) throw new Error('--postgres needs TEST_DATABASE_URL')
  const name = `petstore_bench_${randomBytes(4).toString('hex')}`
  const copies = new Set<string>()
  const admin = new pg.Pool({ connectionString: adminUrl, max: 1 })
  await admin.query(`create database ${name}`)
  const urlOf = (database: string) => {
    const url = new URL(adminUrl)
    url.pathname = `/${database}`
    return url.toString()
  }
  return {
    databaseUrl: urlOf(name),
    freshCopy: async (copyName) => {
      const copy = `${name}_${copyName}`
      copies.add(copy)
      await admin.query(`drop database if exists ${copy} with (force)`)
      await admin.query(`create database ${copy} template ${name}`)
      return urlOf(copy)
    },
    drop: async () => {
      for (const copy of copies) await admin.query(`drop database if exists ${copy} with (force)`)
      await admin.query(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  }
}

/** A new API key in the store, made with the product's own CLI; its Authorization header. */
export async function createKey (databaseUrl: string, name: string): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, 'keys', 'create', '--name', name], { env: { ...process.env, DATABASE_URL: databaseUrl } })
  return `Bearer ${stdout.trim().split('\n').at(-1)!}`
}

/**
 * Starts a process with its stdout going to a file, as a deployment's log collector takes it, rather
 * than to this process, which is busy loading: a pipe it drained late made each log line cost the
 * service far more than it does.
 */
export async function startProcess (command: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess, match: RegExpExecArray }> {
  const logDir = mkdtempSync(join(tmpdir(), 'petstore-bench-log-'))
  const logFile = join(logDir, 'stdout.log')
  const stdout = openSync(logFile, 'w')
  const child = spawn(command[0]!, command.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', stdout, 'inherit'] })
  closeSync(stdout)
  child.on('exit', () => rmSync(logDir, { recursive: true, force: true }))
  for (;;) {
    // Its stderr is this process's: what made it exit is on the terminal.
    if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode}`)
    const match = ready.exec(readFileSync(logFile, 'utf8'))
    if (match) return { child, match }
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Starts the service on the store and waits for its first 200; resolves its URL. */
export async function startService (databaseUrl: string, env: Record<string, string>): Promise<{ child: ChildProcess, url: string }> {
  // Ready means every worker listens (WEB_CONCURRENCY), and with METRICS_PORT set the metrics server too.
  const workers = Number(env.WEB_CONCURRENCY ?? 1)
  const ready = new RegExp(`^${env.METRICS_PORT ? '(?=[\\s\\S]*metrics served at)' : ''}(?:[\\s\\S]*?Server listening at (http://127\\.0\\.0\\.1:\\d+)){${workers}}`)
  const { child, match } = await startProcess(SERVICE, { DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, ready)
  const url = match[1]!
  while ((await fetch(`${url}/healthz`).catch(() => undefined))?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 5))
  return { child, url }
}

export async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

export function rssMbOf (pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((row) => row.startsWith('VmRSS:'))!
  return Number(line.replace(/\D+/g, '')) / 1024
}

/** The CPU time a process has used so far, in seconds: its user and system time in /proc. */
export function cpuSecondsOf (pid: number): number {
  // utime and stime, in clock ticks of 1/100 s, after the command name (which may hold spaces).
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ').slice(11, 13).reduce((sum, ticks) => sum + Number(ticks), 0) / 100
}

/** The share of one core a process used over `seconds`. */
export async function coreShare (pid: number, seconds: number): Promise<number> {
  const before = cpuSecondsOf(pid)
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  return (cpuSecondsOf(pid) - before) / seconds
}
