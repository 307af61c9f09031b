// npm run bench [-- --postgres]: the service as users deploy it, against a bare node:http server, side by side.
// npm run bench [-- --postgres] -- --instances 1,2: the service with WEB_CONCURRENCY at each count, side by side.
// Settings: BENCH_PETS (10000; with more, both sizes run), BENCH_ROUNDS (5), BENCH_SECONDS (3).
// Five rounds: a shared machine's speed swings within seconds, and the median of five adjacent
// service/bare pairs holds steadier than that of three.
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { benchIdleStreams, IDLE_SECONDS, IDLE_STREAMS } from './idle-streams.js'
import { CLI, cpuSecondsOf, createKey, createStore, DEFAULTS_ON, median, POSTGRES, run, startProcess, startService, stop } from './service.js'
import { benchWebhookLatency, describeWebhookLatency } from './webhook-latency.js'

const PETS = Number(process.env.BENCH_PETS ?? 10_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const CONNECTIONS = 50
const STATUSES = ['available', 'pending', 'sold'] as const
// The variants run beside the defaults, to show what a setting costs: limits off and METRICS_PORT
// unset (an empty variable counts as unset; metrics are counted either way, and only served with it),
// and a JSON log line per request (LOG_REQUESTS; off where stdout is not a terminal, as here).
const VARIANTS = {
  off: { label: '(limits off, no METRICS_PORT)', cost: 'limits + METRICS_PORT', env: { RATE_LIMIT_PER_MINUTE: '0', METRICS_PORT: '' } },
  lines: { label: '(LOG_REQUESTS=on)', cost: 'a log line per request', env: { ...DEFAULTS_ON, LOG_REQUESTS: 'on' } }
}
type Variant = keyof typeof VARIANTS
const STRICT = 'createPet (DURABILITY=strict)'

interface Scenario { name: string, method: 'GET' | 'POST', path: string, body?: string, idempotent?: boolean, varied?: boolean, mixed?: boolean, compared?: Variant[] }
interface Run {
  requestsPerSecond: number
  p50: number
  p99: number
  /** The CPU the loaded process used per request (its primary alone under WEB_CONCURRENCY). */
  cpuMicrosPerRequest: number
}
/** A process under load: the service, or the bare server. */
interface Target { url: string, child: ChildProcess }
interface Series { service: Run[], bare: Run[] }

/**
 * Starts a round's processes one after the other, in the order of row `round` of a Williams Latin
 * square over them: each one takes each place once every n rounds, and any two come in either order
 * in as many rounds (n even), so that no setting always starts before another. The process started
 * first in a round, or earlier, has run slower whatever its settings, though not in every trial
 * (docs/benchmarks.md, 29 November). A plain rotation, the order before, started the defaults before
 * the off instance in four rounds of five; and the defaults used to be started first every round.
 * Returned in the order started, which is also the order they are warmed in.
 */
async function startInBalancedOrder<Name extends string> (round: number, starters: Record<Name, () => Promise<Target>>): Promise<Record<Name, Target>> {
  const names = Object.keys(starters) as Name[]
  const started: Partial<Record<Name, Target>> = {}
  try {
    for (const place of williamsRow(names.length, round)) {
      const name = names[place]!
      started[name] = await starters[name]()
    }
  } catch (error) {
    for (const target of Object.values<Target | undefined>(started)) if (target !== undefined) await stop(target.child)
    throw error
  }
  return started as Record<Name, Target>
}

/** Row `row` of a Williams Latin square of order n: 0, 1, n-1, 2, n-2, ... each shifted by the row. */
function williamsRow (n: number, row: number): number[] {
  const first = [0]
  for (let k = 1; first.length < n; k++) {
    first.push(k)
    if (first.length < n) first.push(n - k)
  }
  return first.map((place) => (place + row) % n)
}

/** Seeds the store with the product's own CLI, as an operator would, and returns the Authorization header of the key it made. */
async function seed (databaseUrl: string, dir: string, count: number): Promise<string> {
  const env = { ...process.env, DATABASE_URL: databaseUrl }
  const authorization = await createKey(databaseUrl, 'bench')
  const file = join(dir, 'pets.json')
  const pets = Array.from({ length: count }, (_, i) => JSON.stringify({ name: `Pet ${i}`, categoryId: 1 + (i % 50), status: STATUSES[i % 3] }))
  writeFileSync(file, `[\n${pets.join(',\n')}\n]\n`)
  // The import also refreshes the planner's statistics, as a store in use has them.
  await run(process.execPath, [CLI, 'pets', 'import', file, '--batch-size', '5000'], { env })
  return authorization
}

const CREATE_BODY = '{"name":"Bench","categoryId":7}'

/** The operations every part of the benchmark loads. */
function operations (petId: number) {
  return {
    listPets: { name: 'listPets', method: 'GET', path: '/v1/pets?status=available&limit=20' },
    getPet: { name: 'getPet', method: 'GET', path: `/v1/pets/${petId}` },
    createPet: { name: 'createPet', method: 'POST', path: '/v1/pets', body: CREATE_BODY }
  } satisfies Record<string, Scenario>
}

// The capacity model's mix, on each connection in turn: nine reads (pets and pages picked at random,
// so that a cache keeps only what such a load lets it keep) to one create.
const randomBelow = (n: number) => Math.floor(Math.random() * n)
const MIXED_REQUESTS: autocannon.Request[] = [
  ...Array.from({ length: 9 }, (_, i): autocannon.Request => ({
    method: 'GET',
    setupRequest: (request) => ({
      ...request,
      path: i % 2 === 0 ? `/v1/pets/${1 + randomBelow(PETS)}` : `/v1/pets?status=${STATUSES[randomBelow(3)]}&categoryId=${1 + randomBelow(50)}&limit=20`
    })
  })),
  { method: 'POST', path: '/v1/pets', headers: { 'content-type': 'application/json' }, body: CREATE_BODY }
]

// A store's pets come in many categories and statuses, and each create then lands in a leaf of its
// own of each pets index, where every pet of the createPet row (category 7, available) goes to the
// same one (docs/benchmarks.md, 29 November). Every pair of the seed's 50 categories and 3 statuses
// in turn, as fixed requests, which the load generator builds once: made per request (setupRequest),
// they slowed it, and so the bare server's figure, by a third.
const VARIED_CREATES: autocannon.Request[] = Array.from({ length: 150 }, (_, i) => ({
  method: 'POST',
  path: '/v1/pets',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'Bench', categoryId: 1 + (i * 17) % 50, status: STATUSES[i % 3] })
}))

async function load ({ url: baseUrl, child }: Target, scenario: Scenario, authorization: string, seconds = SECONDS): Promise<Run> {
  const cpuBefore = cpuSecondsOf(child.pid!)
  const result = await autocannon({
    url: baseUrl + scenario.path,
    method: scenario.method,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization, ...(scenario.body !== undefined && { 'content-type': 'application/json' }) },
    ...(scenario.body !== undefined && { body: scenario.body }),
    // A new key on every request, so each one is a first create (stored with its answer), never a replay.
    ...(scenario.idempotent && { requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }] }),
    ...(scenario.varied && { requests: VARIED_CREATES }),
    ...(scenario.mixed && { requests: MIXED_REQUESTS })
  })
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${scenario.name} at ${baseUrl}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`)
  }
  const cpuMicrosPerRequest = (cpuSecondsOf(child.pid!) - cpuBefore) * 1e6 / result.requests.total
  return { requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, cpuMicrosPerRequest }
}

function peakRssMb (pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((row) => row.startsWith('VmHWM:'))!
  return Number(line.replace(/\D+/g, '')) / 1024
}

async function benchSize (count: number) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  const store = await createStore(dir)
  try {
    const authorization = await seed(store.databaseUrl, dir, count)
    const { listPets, getPet, createPet: create } = operations(Math.floor(count / 2))
    const createPet: Scenario = { ...create, compared: ['off'] }
    const scenarios: Scenario[] = [
      { ...listPets, compared: ['off'] },
      { ...getPet, compared: ['lines'] },
      createPet,
      { ...createPet, name: 'createPet (Idempotency-Key)', idempotent: true },
      // The bare server answers it as createPet: its answers differ only in their category and status.
      { ...createPet, name: 'createPet (50 categories, 3 statuses)', varied: true, compared: [] }
    ]
    const started = performance.now()
    const first = await startService(store.databaseUrl, DEFAULTS_ON)
    const startupMs = performance.now() - started
    // The bare server answers what the service answered, byte for byte; an idempotent create apart,
    // as the service stores and sends that answer by another path.
    const answers: Record<string, { status: number, body: string }> = {}
    try {
      for (const scenario of scenarios) {
        const response = await fetch(first.url + scenario.path, {
          method: scenario.method,
          headers: { authorization, 'content-type': 'application/json', ...(scenario.idempotent && { 'idempotency-key': randomUUID() }) },
          body: scenario.body
        })
        answers[`${scenario.method} ${scenario.path}${scenario.idempotent ? ' idempotent' : ''}`] = { status: response.status, body: await response.text() }
      }
    } finally {
      await stop(first.child)
    }
    const startBare = async () => {
      const { child, match } = await startProcess(['node', 'bench/bare-server.mjs'], { BARE_ANSWERS: JSON.stringify({ authorization, answers }) }, /listening (\d+)/)
      return { child, url: `http://127.0.0.1:${match[1]}` }
    }

    // Table order: the defaults-on rows, strict, then the variants' rows, which share their bare runs.
    const variantRow = (name: string, variant: Variant) => `${name} ${VARIANTS[variant].label}`
    const rows = new Map<string, Series>(scenarios.map((scenario) => [scenario.name, { service: [], bare: [] }]))
    rows.set(STRICT, { service: [], bare: [] })
    for (const { name, compared = [] } of scenarios) for (const variant of compared) rows.set(variantRow(name, variant), { service: [], bare: rows.get(name)!.bare })
    let rssMb = 0
    for (let round = 0; round < ROUNDS; round++) {
      // New processes every round: a process keeps a speed of its own for its whole life (here one
      // instance ran 10% faster than its twin, run after run, and the next pair the other way round),
      // so the median is over as many processes as rounds, not over rounds of the same few.
      // Side by side, so that each ratio to the defaults compares adjacent runs, each instance on a new
      // copy of the seeded store (see freshCopy), so that every round measures the same store and no
      // instance works for another's load.
      // In the fifth round the first row comes again: `lines` (compared on no goal) then starts first
      // a second time, and the defaults before the off instance a third time, against two.
      const targets = await startInBalancedOrder(round, {
        lines: async () => await startService(await store.freshCopy('lines'), VARIANTS.lines.env),
        on: async () => await startService(await store.freshCopy('on'), DEFAULTS_ON),
        off: async () => await startService(await store.freshCopy('off'), VARIANTS.off.env),
        bare: startBare
      })
      const { on, off, lines, bare } = targets
      const variants = { off, lines }
      try {
        // A first, unrecorded second of each load on every instance, so that no recorded run is a cold
        // one and the instances compared have the same history, their setting apart (a variant used to
        // be warmed with only the rows it is compared on, while V8 specializes code to what it has seen).
        for (const scenario of scenarios) for (const target of Object.values(targets)) await load(target, scenario, authorization, 1)
        for (const scenario of scenarios) {
          // The runs take turns going first, so that none always runs just after the writes of the row before.
          const runs = [
            async () => rows.get(scenario.name)!.service.push(await load(on, scenario, authorization)),
            async () => rows.get(scenario.name)!.bare.push(await load(bare, scenario, authorization)),
            ...(scenario.compared ?? []).map((variant) => async () => rows.get(variantRow(scenario.name, variant))!.service.push(await load(variants[variant], scenario, authorization)))
          ]
          for (const run of round % 2 === 0 ? runs : runs.reverse()) await run()
        }
        rssMb = Math.max(rssMb, peakRssMb(on.child.pid!))
      } finally {
        for (const { child } of Object.values(targets)) await stop(child)
      }
    }

    // createPet again with DURABILITY=strict: an fsync on every commit, shared by group commit.
    // Alone on the store, so that no other process's checkpoints share its disk.
    const strictRow = rows.get(STRICT)!
    let strictRssMb = 0
    for (let round = 0; round < ROUNDS; round++) {
      const targets = await startInBalancedOrder(round, {
        strict: async () => await startService(await store.freshCopy('strict'), { ...DEFAULTS_ON, DURABILITY: 'strict' }),
        bare: startBare
      })
      const { strict, bare } = targets
      try {
        for (const target of Object.values(targets)) await load(target, createPet, authorization, 1)
        strictRow.service.push(await load(strict, createPet, authorization))
        strictRow.bare.push(await load(bare, createPet, authorization))
        strictRssMb = Math.max(strictRssMb, peakRssMb(strict.child.pid!))
      } finally {
        for (const { child } of Object.values(targets)) await stop(child)
      }
    }
    const costs = scenarios.flatMap(({ name, compared = [] }) => compared.map((variant) => {
      const variantRuns = rows.get(variantRow(name, variant))!.service
      const defaultRuns = rows.get(name)!.service
      // Always the run with the setting on against the run with it off.
      const pairs = defaultRuns.map((run, i) => variant === 'off' ? { on: run, off: variantRuns[i]! } : { on: variantRuns[i]!, off: run })
      const ratios = pairs.map(({ on, off }) => on.requestsPerSecond / off.requestsPerSecond)
      // The same cost as the CPU each request took, which does not count the time a process waited for
      // a core: a round low in both is a process that runs slow, not one that got less of the box.
      const cpuRatios = pairs.map(({ on, off }) => off.cpuMicrosPerRequest / on.cpuMicrosPerRequest)
      const cpuOf = (side: 'on' | 'off') => median(pairs.map((pair) => pair[side].cpuMicrosPerRequest))
      return { name, what: VARIANTS[variant].cost, onOff: median(ratios), ratios, cpuOnOff: median(cpuRatios), cpuRatios, cpuOn: cpuOf('on'), cpuOff: cpuOf('off') }
    }))
    return { count, startupMs, rssMb, strictRssMb, rows, costs }
  } finally {
    await store.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The service with WEB_CONCURRENCY at each of `counts` (plain instances on PostgreSQL; processes sharing
 * the file on SQLite), each on a copy of one seeded store, taking turns under the same load.
 */
async function benchInstances (counts: number[]) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  const store = await createStore(dir)
  try {
    const authorization = await seed(store.databaseUrl, dir, PETS)
    const { listPets, getPet, createPet } = operations(Math.floor(PETS / 2))
    const scenarios: Scenario[] = [listPets, getPet, createPet, { ...createPet, name: '9 reads : 1 create', mixed: true }]
    const runs = new Map(scenarios.map((scenario) => [scenario.name, counts.map((): Run[] => [])]))
    for (let round = 0; round < ROUNDS; round++) {
      // New processes every round, as in the main benchmark: each keeps a speed of its own.
      const services = []
      try {
        for (const count of counts) services.push(await startService(await store.freshCopy(`workers_${count}`), { ...DEFAULTS_ON, WEB_CONCURRENCY: String(count) }))
        for (const scenario of scenarios) for (const service of services) await load(service, scenario, authorization, 1)
        for (const scenario of scenarios) {
          const order = services.map((_, i) => i)
          for (const i of round % 2 === 0 ? order : order.reverse()) runs.get(scenario.name)![i]!.push(await load(services[i]!, scenario, authorization))
        }
      } finally {
        for (const { child } of services) await stop(child)
      }
    }
    return runs
  } finally {
    await store.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const instancesArgument = process.argv.indexOf('--instances')
if (instancesArgument !== -1) {
  const counts = (process.argv[instancesArgument + 1] ?? '1,2').split(',').map(Number)
  const runs = await benchInstances(counts)
  console.log(`\npetstore scaling: ${POSTGRES ? 'PostgreSQL' : 'SQLite'}, WEB_CONCURRENCY ${counts.join(' vs ')}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s, defaults on`)
  console.log(`This machine has ${availableParallelism()} cores for the workers, ${POSTGRES ? 'PostgreSQL, ' : ''}and this load generator together: more processes than cores only take turns.`)
  console.table([...runs].map(([name, series]) => ({
    operation: name,
    ...Object.fromEntries(series.flatMap((instanceRuns, i) => [
      [`${counts[i]} req/s`, Math.round(median(instanceRuns.map((run) => run.requestsPerSecond)))],
      [`${counts[i]} p99 ms`, median(instanceRuns.map((run) => run.p99))]
    ])),
    [`${counts.at(-1)} / ${counts[0]}`]: Number(median(series.at(-1)!.map((run, i) => run.requestsPerSecond / series[0]![i]!.requestsPerSecond)).toFixed(2))
  })))
  process.exit(0)
}

const sizes = PETS === 10_000 ? [10_000] : [10_000, PETS]
const results: Array<Awaited<ReturnType<typeof benchSize>>> = []
for (const size of sizes) results.push(await benchSize(size))
const idle = await benchIdleStreams()
const webhooks = await benchWebhookLatency()

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
  // Each round's ratio too, in round order (the defaults' instance ran first in even rounds): a median
  // of five hides how far apart they were.
  const listed = (ratios: number[]) => ratios.map((ratio) => ratio.toFixed(3)).join(' ')
  for (const { name, what, onOff, ratios, cpuOnOff, cpuRatios, cpuOn, cpuOff } of costs) {
    console.log(`cost of ${what} (${name}): on/off = ${onOff.toFixed(3)} (rounds: ${listed(ratios)}); ` +
      `by CPU per request (off/on): ${cpuOnOff.toFixed(3)} (${cpuOn.toFixed(1)} µs on, ${cpuOff.toFixed(1)} µs off; rounds: ${listed(cpuRatios)})`)
  }
}
// RSS can fall while the streams are held (a collection in between): the change is printed with its sign.
const signedMb = (mb: number) => `${Math.round(mb) >= 0 ? '+' : ''}${Math.round(mb)} MB`
console.log(`\n${IDLE_STREAMS.toLocaleString('en')} idle event streams: RSS ${idle.withoutMb.toFixed(0)} MB -> ${idle.withMb.toFixed(0)} MB ` +
  `(${signedMb(idle.withMb - idle.withoutMb)}); CPU over ${IDLE_SECONDS} s: ${(100 * idle.withoutCpu).toFixed(2)}% of a core without streams, ${(100 * idle.withCpu).toFixed(2)}% with them`)
console.log(describeWebhookLatency(webhooks))
if (results.length === 2) {
  const p50 = (index: number) => median(results[index]!.rows.get('listPets')!.service.map((run) => run.p50))
  console.log(`listPets p50: ${p50(0)} ms at 10,000 pets, ${p50(1)} ms at ${PETS.toLocaleString('en')}: ratio ${(p50(1) / Math.max(p50(0), 0.001)).toFixed(2)}`)
}
