// npm run bench [-- --postgres]: the service as users deploy it, against a bare node:http server, side by side.
// Settings: BENCH_PETS (10000; with more, both sizes run), BENCH_ROUNDS (5), BENCH_SECONDS (3).
// Five rounds: a shared machine's speed swings within seconds, and the median of five adjacent
// service/bare pairs holds steadier than that of three.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'

const POSTGRES = process.argv.includes('--postgres')
const PETS = Number(process.env.BENCH_PETS ?? 10_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const CONNECTIONS = 50
const STATUSES = ['available', 'pending', 'sold'] as const
const CLI = 'dist/petstore.mjs'
// The service as `npm start` and the `petstore` command start it: the bundle, through its #! line.
const SERVICE = [CLI, 'serve']
// Defaults on, as deployed: rate limiting (at a limit no run reaches, so nothing is refused) and metrics.
const DEFAULTS_ON = { RATE_LIMIT_PER_MINUTE: '1000000000', METRICS_PORT: '0' }
// Both off (an empty variable counts as unset), to show what they cost.
const DEFAULTS_OFF = { RATE_LIMIT_PER_MINUTE: '0', METRICS_PORT: '' }
const OFF = '(limits + metrics off)'
const STRICT = 'createPet (DURABILITY=strict)'

interface Scenario { name: string, method: 'GET' | 'POST', path: string, body?: string, idempotent?: boolean, comparedOff?: boolean }
interface Run { requestsPerSecond: number, p50: number, p99: number }
interface Series { service: Run[], bare: Run[] }

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const run = promisify(execFile)

async function createStore (dir: string): Promise<{ databaseUrl: string, drop: () => Promise<void> }> {
  if (!POSTGRES) return { databaseUrl: `sqlite:${join(dir, 'bench.db')}`, drop: async () => {} }
  const adminUrl = process.env.TEST_DATABASE_URL
  if (!adminUrl) throw new Error('--postgres needs TEST_DATABASE_URL')
  const name = `petstore_bench_${randomBytes(4).toString('hex')}`
  const admin = new pg.Pool({ connectionString: adminUrl, max: 1 })
  await admin.query(`create database ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    databaseUrl: url.toString(),
    drop: async () => {
      await admin.query(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  }
}

/** Seeds the store with the product's own CLI, as an operator would, and returns the key it made. */
async function seed (databaseUrl: string, dir: string, count: number): Promise<string> {
  const env = { ...process.env, DATABASE_URL: databaseUrl }
  const { stdout } = await run(process.execPath, [CLI, 'keys', 'create', '--name', 'bench'], { env })
  const key = stdout.trim().split('\n').at(-1)!
  const file = join(dir, 'pets.json')
  // One pet a line, as the import reports rows by line: its summary stays one range ("lines 2-10001").
  const pets = Array.from({ length: count }, (_, i) => JSON.stringify({ name: `Pet ${i}`, categoryId: 1 + (i % 50), status: STATUSES[i % 3] }))
  writeFileSync(file, `[\n${pets.join(',\n')}\n]\n`)
  // The import also refreshes the planner's statistics, as a store in use has them.
  await run(process.execPath, [CLI, 'pets', 'import', file, '--batch-size', '5000'], { env })
  return key
}

async function startProcess (command: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess, match: RegExpExecArray }> {
  const child = spawn(command[0]!, command.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      output += chunk
      const found = ready.exec(output)
      if (found) resolve(found)
    })
    child.on('exit', (code) => reject(new Error(`${command.join(' ')} exited with ${code}: ${output}`)))
  })
  child.stdout!.resume()
  return { child, match }
}

/** Starts the service on the store and waits for its first 200; resolves its URL. */
async function startService (databaseUrl: string, env: Record<string, string>): Promise<{ child: ChildProcess, url: string }> {
  // With METRICS_PORT set, ready means the metrics server listens too (it starts after the API).
  const ready = env.METRICS_PORT ? /Server listening at (http:\/\/127\.0\.0\.1:\d+)[\s\S]*metrics served at/ : /Server listening at (http:\/\/127\.0\.0\.1:\d+)/
  const { child, match } = await startProcess(SERVICE, { DATABASE_URL: databaseUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, ready)
  const url = match[1]!
  while ((await fetch(`${url}/healthz`).catch(() => undefined))?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 5))
  return { child, url }
}

async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

async function load (baseUrl: string, scenario: Scenario, authorization: string, seconds = SECONDS): Promise<Run> {
  const result = await autocannon({
    url: baseUrl + scenario.path,
    method: scenario.method,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization, ...(scenario.body !== undefined && { 'content-type': 'application/json' }) },
    ...(scenario.body !== undefined && { body: scenario.body }),
    // A new key on every request, so each one is a first create (stored with its answer), never a replay.
    ...(scenario.idempotent && { requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }] })
  })
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${scenario.name} at ${baseUrl}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`)
  }
  return { requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 }
}

function peakRssMb (pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((row) => row.startsWith('VmHWM:'))!
  return Number(line.replace(/\D+/g, '')) / 1024
}

async function benchSize (count: number) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  const store = await createStore(dir)
  try {
    const key = await seed(store.databaseUrl, dir, count)
    const authorization = `Bearer ${key}`
    const started = performance.now()
    const on = await startService(store.databaseUrl, DEFAULTS_ON)
    const startupMs = performance.now() - started
    // Side by side on the same store, so that the on/off ratio compares adjacent runs.
    const off = await startService(store.databaseUrl, DEFAULTS_OFF)

    const petId = Math.floor(count / 2)
    const createPet: Scenario = { name: 'createPet', method: 'POST', path: '/v1/pets', body: '{"name":"Bench","categoryId":7}', comparedOff: true }
    const scenarios: Scenario[] = [
      { name: 'listPets', method: 'GET', path: '/v1/pets?status=available&limit=20', comparedOff: true },
      { name: 'getPet', method: 'GET', path: `/v1/pets/${petId}` },
      createPet,
      { ...createPet, name: 'createPet (Idempotency-Key)', idempotent: true }
    ]
    // The bare server answers what the service answered, byte for byte; an idempotent create apart,
    // as the service stores and sends that answer by another path.
    const answers: Record<string, { status: number, body: string }> = {}
    for (const scenario of scenarios) {
      const response = await fetch(on.url + scenario.path, {
        method: scenario.method,
        headers: { authorization, 'content-type': 'application/json', ...(scenario.idempotent && { 'idempotency-key': randomUUID() }) },
        body: scenario.body
      })
      answers[`${scenario.method} ${scenario.path}${scenario.idempotent ? ' idempotent' : ''}`] = { status: response.status, body: await response.text() }
    }
    const bare = await startProcess(['node', 'bench/bare-server.mjs'], { BARE_ANSWERS: JSON.stringify({ authorization, answers }) }, /listening (\d+)/)
    const bareUrl = `http://127.0.0.1:${bare.match[1]}`

    // Table order: the defaults-on rows, strict, then the off rows, which share their bare runs.
    const rows = new Map<string, Series>(scenarios.map((scenario) => [scenario.name, { service: [], bare: [] }]))
    rows.set(STRICT, { service: [], bare: [] })
    for (const { name, comparedOff } of scenarios) if (comparedOff) rows.set(`${name} ${OFF}`, { service: [], bare: rows.get(name)!.bare })
    // A first, unrecorded second of each load, so that no recorded run is a cold one.
    for (const scenario of scenarios) {
      for (const url of [on.url, bareUrl, ...(scenario.comparedOff === true ? [off.url] : [])]) await load(url, scenario, authorization, 1)
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of scenarios) {
        // On and off take turns going first, so that neither always runs just after the writes of the row before.
        const runs = [
          async () => rows.get(scenario.name)!.service.push(await load(on.url, scenario, authorization)),
          async () => rows.get(scenario.name)!.bare.push(await load(bareUrl, scenario, authorization)),
          ...(scenario.comparedOff === true ? [async () => rows.get(`${scenario.name} ${OFF}`)!.service.push(await load(off.url, scenario, authorization))] : [])
        ]
        for (const run of round % 2 === 0 ? runs : runs.reverse()) await run()
      }
    }
    const rssMb = peakRssMb(on.child.pid!)
    await stop(on.child)
    await stop(off.child)

    // createPet again with DURABILITY=strict: an fsync on every commit, shared by group commit.
    // Alone on the store, so that no other process's checkpoints share its disk.
    const strict = await startService(store.databaseUrl, { ...DEFAULTS_ON, DURABILITY: 'strict' })
    const strictRow = rows.get(STRICT)!
    for (let round = 0; round < ROUNDS; round++) {
      strictRow.service.push(await load(strict.url, createPet, authorization))
      strictRow.bare.push(await load(bareUrl, createPet, authorization))
    }
    const strictRssMb = peakRssMb(strict.child.pid!)
    await stop(strict.child)
    await stop(bare.child)
    const costs = scenarios.filter(({ comparedOff }) => comparedOff).map(({ name }) => {
      const offRuns = rows.get(`${name} ${OFF}`)!.service
      return { name, onOff: median(rows.get(name)!.service.map((run, i) => run.requestsPerSecond / offRuns[i]!.requestsPerSecond)) }
    })
    return { count, startupMs, rssMb, strictRssMb, rows, costs }
  } finally {
    await store.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const sizes = PETS === 10_000 ? [10_000] : [10_000, PETS]
const results: Array<Awaited<ReturnType<typeof benchSize>>> = []
for (const size of sizes) results.push(await benchSize(size))

console.log(`\npetstore benchmark: ${POSTGRES ? 'PostgreSQL' : 'SQLite'}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s, A/B against a bare node:http server`)
console.log(`Service defaults on (rate limiting at ${DEFAULTS_ON.RATE_LIMIT_PER_MINUTE}/min, METRICS_PORT set) unless the row says off.`)
for (const { count, startupMs, rssMb, strictRssMb, rows, costs } of results) {
  console.log(`\n${count.toLocaleString('en')} pets; start-up to first 200: ${startupMs.toFixed(0)} ms; peak RSS under load: ${rssMb.toFixed(0)} MB (DURABILITY=strict: ${strictRssMb.toFixed(0)} MB)`)
  console.table([...rows].map(([name, { service, bare }]) => ({
    operation: name,
    'req/s': Math.round(median(service.map((run) => run.requestsPerSecond))),
    'p50 ms': median(service.map((run) => run.p50)),
    'p99 ms': median(service.map((run) => run.p99)),
    'bare req/s': Math.round(median(bare.map((run) => run.requestsPerSecond))),
    // The ceiling's own latency: under load on a small shared box, even it cannot answer faster.
    'bare p99 ms': median(bare.map((run) => run.p99)),
    'ratio to bare': Number(median(service.map((run, i) => run.requestsPerSecond / bare[i]!.requestsPerSecond)).toFixed(3))
  })))
  for (const { name, onOff } of costs) console.log(`cost of limits + metrics (${name}): on/off = ${onOff.toFixed(2)}`)
}
if (results.length === 2) {
  const p50 = (index: number) => median(results[index]!.rows.get('listPets')!.service.map((run) => run.p50))
  console.log(`listPets p50: ${p50(0)} ms at 10,000 pets, ${p50(1)} ms at ${PETS.toLocaleString('en')}: ratio ${(p50(1) / Math.max(p50(0), 0.001)).toFixed(2)}`)
}
