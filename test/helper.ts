import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, type TestContext } from 'node:test'
import { connect, type AddressInfo, type Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import pg from 'pg'
import { insertApiKey, type NewApiKey } from '../src/api-keys/api-key.repository.js'
import { generateApiKey } from '../src/api-keys/api-key.service.js'
import type { ApiKeyVerifierOptions } from '../src/api-keys/api-key.verifier.js'
import { buildApp, type Limits } from '../src/app.js'
import { createClient, type NewPet, type Pet, type PetStoreClient } from '../src/client/index.js'
import { systemClock, type Clock } from '../src/clock.js'
import { loadConfig, type Config } from '../src/config.js'
import type { Db } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { openStore, storeOptionsFrom, type StoreOptions } from '../src/store/open-store.js'
import type { Store } from '../src/store/store.js'
import type { WebhookNetwork } from '../src/webhooks/webhook-transport.js'
import { checkContract } from './contract.js'

const cleanups = new WeakMap<TestContext, Array<() => unknown>>()

/** Runs `fn` when the test ends, after everything deferred later (last in, first out). */
export function defer (t: TestContext, fn: () => unknown): void {
  let stack = cleanups.get(t)
  if (stack === undefined) {
    const created: Array<() => unknown> = []
    cleanups.set(t, created)
    // Every cleanup runs even when one fails (a failed check must not leave a store open), then the first failure is thrown.
    t.after(async () => {
      const failures: unknown[] = []
      for (const cleanup of created.reverse()) await Promise.resolve().then(cleanup).catch((error: unknown) => failures.push(error))
      if (failures.length > 0) throw failures[0]
    })
    stack = created
  }
  stack.push(fn)
}

/** A fresh directory removed when the test ends. */
export function tempDir (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  defer(t, () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A kind of store the suites run against. */
export interface TestStore {
  name: 'sqlite' | 'postgres'
  /** The DATABASE_URL of an empty store of the test's own, removed when the test ends. */
  databaseUrl: (t: TestContext) => Promise<string>
}

const SQLITE: TestStore = {
  name: 'sqlite',
  databaseUrl: async (t) => `sqlite:${join(tempDir(t), 'petstore.db')}`
}

function postgres (adminUrl: string): TestStore {
  let admin: pg.Pool | undefined
  return {
    name: 'postgres',
    databaseUrl: async (t) => {
      admin ??= new pg.Pool({ connectionString: adminUrl, max: 2, allowExitOnIdle: true })
      const name = `petstore_test_${randomBytes(6).toString('hex')}`
      await admin.query(`create database ${name}`)
      defer(t, () => admin!.query(`drop database if exists ${name} with (force)`))
      const url = new URL(adminUrl)
      url.pathname = `/${name}`
      return url.toString()
    }
  }
}

/**
 * When TEST_DATABASE_URL is a pooler's (PgBouncer in transaction mode, as CI runs the suite a second
 * time), TEST_DATABASE_DIRECT_URL names the server behind it: the same database there, for what needs
 * a direct connection (DATABASE_DIRECT_URL); undefined otherwise.
 */
export function directUrlOf (databaseUrl: string): string | undefined {
  const direct = process.env.TEST_DATABASE_DIRECT_URL
  if (direct === undefined || databaseUrl.startsWith('sqlite:')) return undefined
  const url = new URL(direct)
  url.pathname = new URL(databaseUrl).pathname
  return url.toString()
}

/** SQLite always; PostgreSQL too when TEST_DATABASE_URL is set (CI sets it). */
export const TEST_STORES: TestStore[] = [SQLITE]
if (process.env.TEST_DATABASE_URL) TEST_STORES.push(postgres(process.env.TEST_DATABASE_URL))

/** Defines the suite once per store, each in a `describe` named after it. */
export function forEachStore (suite: (store: TestStore) => void): void {
  for (const store of TEST_STORES) describe(`on ${store.name}`, () => suite(store))
}

/** Opens the store at `databaseUrl` (four PostgreSQL connections unless told otherwise), closed when the test ends. */
export function openTestStore (t: TestContext, databaseUrl: string, options: StoreOptions = {}): Store {
  const store = openStore(databaseUrl, { poolSize: 4, ...options, directUrl: options.directUrl ?? directUrlOf(databaseUrl) })
  defer(t, () => store.close())
  return store
}

/** A migrated store of the test's own, closed when the test ends. */
export async function createTestStore (t: TestContext, kind: TestStore = SQLITE, options: StoreOptions = {}): Promise<{ store: Store, db: Db, databaseUrl: string }> {
  const databaseUrl = await kind.databaseUrl(t)
  const store = openTestStore(t, databaseUrl, options)
  await migrateToLatest(store.db)
  return { store, db: store.db, databaseUrl }
}

/** A new key in the store, with every scope and no expiry unless told; its id and its text. */
export async function createKey (db: Db, name = 'test', options: Pick<NewApiKey, 'scopes' | 'expiresAt'> = {}, clock: Clock = systemClock): Promise<{ id: bigint, key: string }> {
  const { key, hash, hint } = generateApiKey()
  return { id: await insertApiKey(db, { name, hash, hint, ...options }, clock), key }
}

export interface TestApp {
  app: FastifyInstance
  store: Store
  db: Db
  config: Config
  /** A valid key's Authorization header. */
  auth: { authorization: string }
}

/**
 * The limits of apps the tests build: load shedding off unless a test sets it, because on a loaded CI
 * machine the process is at times not scheduled for over a second, and a request then shed with a 503
 * fails a test about something else.
 */
export const TEST_LIMITS: Partial<Limits> = { maxEventLoopDelayMs: 3_600_000 }

interface BuildOptions {
  store?: TestStore
  env?: NodeJS.ProcessEnv
  clock?: Clock
  verifierOptions?: ApiKeyVerifierOptions
  limits?: Partial<Limits>
  webhookNetwork?: WebhookNetwork
  /** Where the app logs; by default, nowhere. */
  logger?: FastifyBaseLogger
  /** The store's settings beyond those of the configuration (see StoreOptions). */
  storeOptions?: StoreOptions
  /** Whether its answers are checked against its document when the test ends (by default); a test of that check sets its own. */
  answersChecked?: boolean
}

/**
 * The real app on a real, migrated store of its own, with one valid key; closed when the test ends,
 * after checking every answer it gave against its OpenAPI document (see checkContract).
 */
export async function build (t: TestContext, { store: kind, env, clock, verifierOptions, limits, webhookNetwork, logger, storeOptions, answersChecked = true }: BuildOptions = {}): Promise<TestApp> {
  const databaseUrl = await (kind ?? SQLITE).databaseUrl(t)
  const config = loadConfig({ DATABASE_URL: databaseUrl, ...env })
  const store = openTestStore(t, databaseUrl, { ...storeOptionsFrom(config), poolSize: 4, ...(clock !== undefined && { clock }), ...storeOptions })
  await migrateToLatest(store.db)
  const app = await buildApp({ config, store, verifierOptions, limits: { ...TEST_LIMITS, ...limits }, webhookNetwork, logger })
  defer(t, () => app.close())
  if (answersChecked) checkAnswers(t, app)
  const { key } = await createKey(store.db)
  return { app, store, db: store.db, config, auth: { authorization: `Bearer ${key}` } }
}

/** Checks every answer `app` gives during the test against its OpenAPI document, when the test ends (see checkContract). */
export function checkAnswers (t: TestContext, app: FastifyInstance): void {
  checkContract(t, app, (check) => { defer(t, check) })
}

/**
 * A clock that stands still until the test moves it: `advance` lets time pass, `step` moves the time
 * of day alone, as NTP or a resumed VM does.
 */
export function manualClock (start = Date.parse('2026-11-23T12:00:00Z')): Clock & { advance: (ms: number) => void, step: (ms: number) => void } {
  let now = start
  let elapsed = 1000 // as a process's performance.now(), never 0: lru-cache takes an entry's start of 0 for none, which never expires
  return {
    now: () => now,
    elapsed: () => elapsed,
    advance: (ms) => {
      now += ms
      elapsed += ms
    },
    step: (ms) => { now += ms }
  }
}

/** The typed client (`petstore/client`) on the test's app, listening on a free loopback port. */
export async function clientFor (testApp: TestApp): Promise<PetStoreClient> {
  const origin = testApp.app.server.listening ? `http://127.0.0.1:${(testApp.app.server.address() as AddressInfo).port}` : await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  return createClient({ baseUrl: `${origin}/v1`, apiKey: testApp.auth.authorization.slice('Bearer '.length) })
}

/** A raw TCP connection: all it has received so far, and its close, reset or not (events.once rejects on a reset). */
export interface RawConnection { socket: Socket, received: () => string, closed: Promise<void> }

/** A raw TCP connection to the test's app (listening on a free loopback port). */
export async function openRawConnection (testApp: TestApp): Promise<RawConnection> {
  if (!testApp.app.server.listening) await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  return connectRaw((testApp.app.server.address() as AddressInfo).port)
}

/** A raw TCP connection to a loopback port. */
export function connectRaw (port: number): RawConnection {
  const socket = connect(port, '127.0.0.1')
  let received = ''
  socket.on('data', (chunk) => { received += chunk })
  socket.on('error', () => {}) // the server may close while the client still writes: a reset
  const closed = new Promise<void>((resolve) => { socket.once('close', () => { resolve() }) })
  return { socket, received: () => received, closed }
}

/**
 * Resolves once `condition` holds, looked at every `everyMs`; past `withinMs` it fails, with what
 * `describe` says was seen (a process's output, counts).
 */
export async function waitFor (condition: () => boolean, describe: () => string, { withinMs = 5000, everyMs = 20 } = {}): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not seen within ${withinMs / 1000} s:\n${describe()}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** Waits until what a raw connection received passes `seen`, or 5 s; the test then asserts on it either way. */
export async function untilReceived (received: () => string, seen: (text: string) => boolean): Promise<void> {
  const deadline = Date.now() + 5000
  while (!seen(received()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5))
}

/**
 * Opens a connection that never ends its side (allowHalfOpen: the client a server waits on after its
 * answer), writes `sent`, and resolves with what it received once the server ended its own side; it
 * stays open to the test's end.
 */
export async function halfOpenAnswered (t: TestContext, port: number, sent: string): Promise<string> {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true })
  defer(t, () => socket.destroy())
  socket.on('error', () => {})
  let received = ''
  socket.on('data', (chunk) => { received += chunk })
  socket.write(sent)
  await once(socket, 'end')
  return received
}

/** Whether `check` comes true within `ms`, tried every 50 ms. */
export async function servedWithin (check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  do {
    if (await check().catch(() => false)) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  } while (Date.now() < deadline)
  return false
}

/** Sends `request` on a connection of its own and ends it; resolves with all the server wrote back, once it closed the connection. */
export async function exchange (testApp: TestApp, request: string): Promise<string> {
  const { socket, received, closed } = await openRawConnection(testApp)
  socket.end(request)
  await closed
  return received()
}

/** Whether `socket` closes within `ms` (false past it): how the tests see a server close a connection. */
export async function closesWithin (socket: Socket, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), ms) })
  try {
    return await Promise.race([once(socket, 'close').then(() => true), late])
  } finally {
    clearTimeout(timer)
  }
}

/** Creates a pet through the typed client and returns it, failing the test unless it is a 201. */
export async function createPet (testApp: TestApp, body: NewPet): Promise<Pet> {
  const client = await clientFor(testApp)
  const { data, response } = await client.POST('/pets', { body })
  if (response.status !== 201 || data === undefined) throw new Error(`createPet answered ${response.status}`)
  return data
}

/** The URL of a `Link: rel="next"` header, if there is one. */
export function nextLink (header: unknown): string | undefined {
  return /^<([^>]+)>; rel="next"$/.exec(String(header ?? ''))?.[1]
}

/** Asserts the Error body shape: code, message and a status equal to the HTTP status. */
export function errorOf (response: { statusCode: number, headers: Record<string, unknown>, json: () => any }): { code: string, message: string, status: number } {
  const body = response.json()
  if (!String(response.headers['content-type']).startsWith('application/json')) throw new Error('error is not JSON')
  if (body.status !== response.statusCode) throw new Error(`Error.status ${body.status} differs from HTTP ${response.statusCode}`)
  if (typeof body.code !== 'string' || typeof body.message !== 'string') throw new Error(`not an Error body: ${JSON.stringify(body)}`)
  if (Object.keys(body).length !== 3) throw new Error(`Error body has extra fields: ${JSON.stringify(body)}`)
  return body
}
