import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { insertApiKey } from '../src/api-keys/api-key.repository.js'
import { generateApiKey } from '../src/api-keys/api-key.service.js'
import type { ApiKeyVerifierOptions } from '../src/api-keys/api-key.verifier.js'
import { buildApp } from '../src/app.js'
import { loadConfig, type Config } from '../src/config.js'
import type { Db } from '../src/db/database.js'
import { createDb } from '../src/db/create-db.js'
import { migrateToLatest } from '../src/db/migrate.js'

/** A fresh directory removed when the test ends. */
export function tempDir (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * A migrated SQLite store of the test's own. The caller destroys it (after closing what uses it:
 * node:test runs `after` hooks in the order they were added).
 */
export async function createTestDb (t: TestContext): Promise<{ db: Db, databaseUrl: string }> {
  const databaseUrl = `sqlite:${join(tempDir(t), 'petstore.db')}`
  const db = createDb(databaseUrl)
  await migrateToLatest(db)
  return { db, databaseUrl }
}

export async function createKey (db: Db, name = 'test'): Promise<{ id: bigint, key: string }> {
  const { key, hash, hint } = generateApiKey()
  return { id: await insertApiKey(db, { name, hash, hint }), key }
}

export interface TestApp {
  app: FastifyInstance
  db: Db
  config: Config
  /** A valid key's Authorization header. */
  auth: { authorization: string }
}

/** The real app on a real, migrated store of its own, with one valid key; closed when the test ends. */
export async function build (t: TestContext, options: { env?: NodeJS.ProcessEnv, verifierOptions?: ApiKeyVerifierOptions } = {}): Promise<TestApp> {
  const { db, databaseUrl } = await createTestDb(t)
  const config = loadConfig({ DATABASE_URL: databaseUrl, ...options.env })
  const app = await buildApp({ config, db, verifierOptions: options.verifierOptions })
  t.after(async () => {
    await app.close()
    await db.destroy()
  })
  const { key } = await createKey(db)
  return { app, db, config, auth: { authorization: `Bearer ${key}` } }
}

/** Creates a pet over HTTP and returns the parsed body, failing the test unless it is a 201. */
export async function createPet (testApp: TestApp, body: Record<string, unknown>): Promise<{ id: number, name: string, categoryId: number, status: string }> {
  const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: body })
  if (response.statusCode !== 201) throw new Error(`createPet answered ${response.statusCode}: ${response.body}`)
  return response.json()
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
