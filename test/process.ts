import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import type { TestContext } from 'node:test'
import { defer, directUrlOf } from './helper.js'

/** The newest modification time of a file under `dir`. */
function newestChange (dir: string): number {
  return Math.max(...readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => statSync(join(entry.parentPath, entry.name)).mtimeMs))
}

export const BUNDLE = 'dist/petstore.mjs'

/**
 * The `petstore` command as users run it, the bundle `npm test` makes first, when it is newer than
 * every source file: it starts in a third of the time. Else (a test run by itself after an edit) the
 * sources through tsx, so that a test never runs stale code.
 */
export const CLI = existsSync(BUNDLE) && statSync(BUNDLE).mtimeMs > newestChange('src') ? [BUNDLE] : ['--import', 'tsx', 'src/cli/main.ts']

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `petstore ARGS` to completion, or until killed (SIGKILL) past `killAfterMs`. */
export async function runCli (args: string[], env: NodeJS.ProcessEnv, { killAfterMs }: { killAfterMs?: number } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [...CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const timer = killAfterMs === undefined ? undefined : setTimeout(() => { child.kill('SIGKILL') }, killAfterMs)
  child.on('exit', () => { clearTimeout(timer) })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += chunk })
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const [code] = await once(child, 'exit')
  return { code, stdout, stderr }
}

/** Makes a key with `petstore keys create` and returns its text. */
export async function createKey (env: NodeJS.ProcessEnv, name = 'test'): Promise<string> {
  const made = await runCli(['keys', 'create', '--name', name], env)
  if (made.code !== 0) throw new Error(`keys create exited with ${made.code}: ${made.stderr}`)
  return made.stdout.trimEnd().split('\n').at(-1)!
}

/** The keys printed in `output`, each on a line of its own (a terminal's end with CR LF). */
export function printedKeys (output: string): string[] {
  return output.match(/^ps_[0-9A-Za-z]{38}(?=\r?$)/gm) ?? []
}

export interface ServerProcess {
  url: string
  child: ChildProcess
  /** Everything written to stdout so far. */
  output: () => string
  /** Sends the signal and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

/** Starts `petstore serve` (or another command line) on a free port and waits until it listens. */
export async function startServer (t: TestContext, env: NodeJS.ProcessEnv, command?: string[], stdin: 'ignore' | 'pipe' = 'ignore'): Promise<ServerProcess> {
  const { ready, ...server } = await startProcess(t, env, /Server listening at (http:\/\/127\.0\.0\.1:\d+)/, command, stdin)
  return { url: ready[1]!, ...server }
}

/** True while the process `pid` exists (and is not a zombie). */
export function isRunning (pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

/**
 * Starts `petstore serve` with its output on a terminal (script(1) makes one), where the first start
 * of a store shows its first key. Its `stop` signals the service itself (script would exit at once)
 * and resolves with its exit code, which script returns.
 */
export async function startServerOnTerminal (t: TestContext, env: NodeJS.ProcessEnv): Promise<ServerProcess & { pid: number }> {
  // Each word quoted for the shell script(1) runs the command with.
  const command = ['exec', ...[process.execPath, ...CLI, 'serve'].map((word) => `'${word.replaceAll("'", "'\\''")}'`)].join(' ')
  // Its stdin is what is typed on the terminal.
  const server = await startServer(t, { LOG_FORMAT: 'json', ...env }, ['script', '--quiet', '--flush', '--return', '--command', command, '/dev/null'], 'pipe')
  const pid = Number(readFileSync(`/proc/${server.child.pid}/task/${server.child.pid}/children`, 'utf8').trim()) // script's one child, exec'd into the service
  // Killed, script would leave the service behind, without its terminal.
  defer(t, () => { if (isRunning(pid)) process.kill(pid, 'SIGKILL') })
  return {
    ...server,
    pid,
    stop: async (signal = 'SIGTERM') => {
      const exited = server.child.exitCode === null ? once(server.child, 'exit').then(([code]) => code as number | null) : server.child.exitCode
      process.kill(pid, signal)
      return await exited
    }
  }
}

/** Starts `petstore serve` (or another command line) on a free port and waits until its output matches `ready` (a line it logs while it starts, say). */
export async function startProcess (t: TestContext, env: NodeJS.ProcessEnv, ready: RegExp, command: string[] = [process.execPath, ...CLI, 'serve'], stdin: 'ignore' | 'pipe' = 'ignore'): Promise<Omit<ServerProcess, 'url'> & { ready: RegExpExecArray }> {
  const [file, ...args] = command as [string, ...string[]]
  const child = spawn(file, args, {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...directUrlSetting(env), ...env },
    stdio: [stdin, 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const exited = once(child, 'exit').then(([code]) => code as number | null)
  defer(t, () => { if (child.exitCode === null) child.kill('SIGKILL') })

  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${stdout}\n${stderr}`)), 15_000)
    child.stdout!.on('data', (chunk) => {
      stdout += chunk
      const found = ready.exec(stdout)
      if (found) {
        clearTimeout(timer)
        resolve(found)
      }
    })
    exited.then((code) => reject(new Error(`server exited with ${code}:\n${stdout}\n${stderr}`)), () => {})
  })

  return {
    ready: match,
    child,
    output: () => stdout,
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal)
      return await exited
    }
  }
}

export interface ListedPet { id: number, name: string, categoryId: number, status: string }

/** Every item a list answers, following `Link: rel="next"` page after page from `path`. */
async function listAll<Item> (baseUrl: string, headers: Record<string, string>, path: string): Promise<Item[]> {
  const items: Item[] = []
  let next: string | undefined = path
  while (next !== undefined) {
    const response: Response = await fetch(baseUrl + next, { headers })
    if (response.status !== 200) throw new Error(`${next} answered ${response.status}`)
    items.push(...await response.json() as Item[])
    next = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
  }
  return items
}

/** Every pet the server lists. */
export async function listAllPets (baseUrl: string, headers: Record<string, string>, limit = 100): Promise<ListedPet[]> {
  return await listAll(baseUrl, headers, `/v1/pets?limit=${limit}`)
}

export interface ListedOrder { id: number, petId: number, status: string, createdAt: string, updatedAt: string }

/** Every order the server lists. */
export async function listAllOrders (baseUrl: string, headers: Record<string, string>): Promise<ListedOrder[]> {
  return await listAll(baseUrl, headers, '/v1/store/orders?limit=100')
}

export interface ListedEvent { id: number, type: string, occurredAt: string, data: unknown }

/** Every event of the event log, oldest first. */
export async function listAllEvents (baseUrl: string, headers: Record<string, string>): Promise<ListedEvent[]> {
  return await listAll(baseUrl, headers, '/v1/events?limit=1000')
}

/** DATABASE_DIRECT_URL for a server on a pooler's database (see directUrlOf). */
function directUrlSetting (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const directUrl = env.DATABASE_URL === undefined ? undefined : directUrlOf(env.DATABASE_URL)
  return directUrl === undefined ? {} : { DATABASE_DIRECT_URL: directUrl }
}
