// npm run bench [-- --postgres]: the service against a bare node:http server, side by side.
// Settings: BENCH_PETS (10000; with more, both sizes run), BENCH_ROUNDS (5), BENCH_SECONDS (3).
// Five rounds: a shared machine's speed swings within seconds, and the median of five adjacent
// service/bare pairs holds steadier than that of three.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { insertApiKey } from '../src/api-keys/api-key.repository.js'
import { generateApiKey } from '../src/api-keys/api-key.service.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { refreshPetStatistics } from '../src/pets/pet.repository.js'

const POSTGRES = process.argv.includes('--postgres')
const PETS = Number(process.env.BENCH_PETS ?? 10_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const CONNECTIONS = 50
const STATUSES = ['available', 'pending', 'sold'] as const
// The service as `npm start` and the `petstore` command start it: the bundle, through its #! line.
const SERVICE = ['dist/petstore.mjs', 'serve']

interface Scenario { name: string, method: 'GET' | 'POST', path: string, body?: string }
interface Run { requestsPerSecond: number, p50: number, p99: number }

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

async function createStore (): Promise<{ databaseUrl: string, drop: () => Promise<void> }> {
  if (!POSTGRES) {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
    return { databaseUrl: `sqlite:${join(dir, 'bench.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
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

/** Migrates and seeds the store directly (not through the API) and returns a key. */
async function seed (databaseUrl: string, count: number): Promise<string> {
  const db = createDb(databaseUrl)
  await migrateToLatest(db)
  const { key, hash, hint } = generateApiKey()
  await insertApiKey(db, { name: 'bench', hash, hint })
  const now = new Date().toISOString()
  await db.transaction().execute(async (trx) => {
    for (let start = 0; start < count; start += 1000) {
      const rows = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({
        name: `Pet ${start + i}`, category_id: BigInt(1 + ((start + i) % 50)), status: STATUSES[(start + i) % 3]!, created_at: now
      }))
      await trx.insertInto('pets').values(rows).execute()
    }
  })
  await refreshPetStatistics(db) // as a store in use has them
  await db.destroy()
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

async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

async function load (baseUrl: string, scenario: Scenario, authorization: string): Promise<Run> {
  const result = await autocannon({
    url: baseUrl + scenario.path,
    method: scenario.method,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: { authorization, ...(scenario.body !== undefined && { 'content-type': 'application/json' }) },
    ...(scenario.body !== undefined && { body: scenario.body })
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
  const store = await createStore()
  try {
    const key = await seed(store.databaseUrl, count)
    const authorization = `Bearer ${key}`
    const started = performance.now()
    const service = await startProcess(SERVICE, {
      DATABASE_URL: store.databaseUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0'
    }, /Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
    const serviceUrl = service.match[1]!
    while ((await fetch(`${serviceUrl}/healthz`).catch(() => undefined))?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 5))
    const startupMs = performance.now() - started

    const petId = Math.floor(count / 2)
    const scenarios: Scenario[] = [
      { name: 'listPets', method: 'GET', path: '/v1/pets?status=available&limit=20' },
      { name: 'getPet', method: 'GET', path: `/v1/pets/${petId}` },
      { name: 'createPet', method: 'POST', path: '/v1/pets', body: '{"name":"Bench","categoryId":7}' }
    ]
    // The bare server answers what the service answered, byte for byte.
    const answers: Record<string, { status: number, body: string }> = {}
    for (const scenario of scenarios) {
      const response = await fetch(serviceUrl + scenario.path, {
        method: scenario.method, headers: { authorization, 'content-type': 'application/json' }, body: scenario.body
      })
      answers[`${scenario.method} ${scenario.path}`] = { status: response.status, body: await response.text() }
    }
    const bare = await startProcess(['node', 'bench/bare-server.mjs'], { BARE_ANSWERS: JSON.stringify({ authorization, answers }) }, /listening (\d+)/)
    const bareUrl = `http://127.0.0.1:${bare.match[1]}`

    const runs = new Map<string, { service: Run[], bare: Run[] }>(scenarios.map((scenario) => [scenario.name, { service: [], bare: [] }]))
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of scenarios) {
        runs.get(scenario.name)!.service.push(await load(serviceUrl, scenario, authorization))
        runs.get(scenario.name)!.bare.push(await load(bareUrl, scenario, authorization))
      }
    }
    const rssMb = peakRssMb(service.child.pid!)
    await stop(service.child)

    // createPet again with DURABILITY=strict: an fsync on every commit, shared by group commit.
    const strict = await startProcess(SERVICE, {
      DATABASE_URL: store.databaseUrl, PORT: '0', HOST: '127.0.0.1', RATE_LIMIT_PER_MINUTE: '0', DURABILITY: 'strict'
    }, /Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
    const create = scenarios.find((scenario) => scenario.name === 'createPet')!
    const strictRuns = { service: [] as Run[], bare: [] as Run[] }
    runs.set('createPet (strict)', strictRuns)
    for (let round = 0; round < ROUNDS; round++) {
      strictRuns.service.push(await load(strict.match[1]!, create, authorization))
      strictRuns.bare.push(await load(bareUrl, create, authorization))
    }
    const strictRssMb = peakRssMb(strict.child.pid!)
    await stop(strict.child)
    await stop(bare.child)
    return { count, startupMs, rssMb, strictRssMb, runs }
  } finally {
    await store.drop()
  }
}

const sizes = PETS === 10_000 ? [10_000] : [10_000, PETS]
const results: Array<Awaited<ReturnType<typeof benchSize>>> = []
for (const size of sizes) results.push(await benchSize(size))

console.log(`\npetstore benchmark: ${POSTGRES ? 'PostgreSQL' : 'SQLite'}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s, A/B against a bare node:http server`)
for (const { count, startupMs, rssMb, strictRssMb, runs } of results) {
  console.log(`\n${count.toLocaleString('en')} pets; start-up to first 200: ${startupMs.toFixed(0)} ms; peak RSS under load: ${rssMb.toFixed(0)} MB (DURABILITY=strict: ${strictRssMb.toFixed(0)} MB)`)
  console.table([...runs].map(([name, { service, bare }]) => ({
    operation: name,
    'req/s': Math.round(median(service.map((run) => run.requestsPerSecond))),
    'p50 ms': median(service.map((run) => run.p50)),
    'p99 ms': median(service.map((run) => run.p99)),
    'bare req/s': Math.round(median(bare.map((run) => run.requestsPerSecond))),
    // The ceiling's own latency: under load on a small shared box, even it cannot answer faster.
    'bare p99 ms': median(bare.map((run) => run.p99)),
    'ratio to bare': Number(median(service.map((run, i) => run.requestsPerSecond / bare[i]!.requestsPerSecond)).toFixed(3))
  })))
}
if (results.length === 2) {
  const p50 = (index: number) => median(results[index]!.runs.get('listPets')!.service.map((run) => run.p50))
  console.log(`listPets p50: ${p50(0)} ms at 10,000 pets, ${p50(1)} ms at ${PETS.toLocaleString('en')}: ratio ${(p50(1) / Math.max(p50(0), 0.001)).toFixed(2)}`)
}
