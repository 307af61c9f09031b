import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import pg from 'pg'
import { TEST_STORES } from '../helper.js'
import { runCli } from '../process.js'

/** A PostgreSQL message from the server: its type, then its length (itself included) and its body. */
function message (type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeInt32BE(body.length + 4)
  return Buffer.concat([Buffer.from(type), length, body])
}

/** An authentication request of the given kind (10 SASL, 11 SASL continue) and data. */
function authentication (kind: number, data: string): Buffer {
  const code = Buffer.alloc(4)
  code.writeInt32BE(kind)
  return message('R', Buffer.concat([code, Buffer.from(data)]))
}

/**
 * As much of a PostgreSQL server as asks a client to authenticate with SCRAM-SHA-256 (PostgreSQL's
 * default since 14): its first message, then the second step, at which a client without a password fails.
 */
async function scramAskingServer (t: TestContext): Promise<number> {
  const server = createServer((socket) => {
    let messages = 0
    socket.on('data', () => {
      messages++
      if (messages === 1) socket.write(authentication(10, 'SCRAM-SHA-256\0\0'))
      if (messages === 2) socket.write(authentication(11, 'r=nonce,s=c2FsdA==,i=4096'))
    })
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.close() })
  return (server.address() as AddressInfo).port
}

test('a PostgreSQL URL without the password the server asks for is one line that says so, not the driver\'s SCRAM message', async (t) => {
  const port = await scramAskingServer(t)
  for (const url of [`postgres://app@127.0.0.1:${port}/pets`, `postgres://app:@127.0.0.1:${port}/pets`]) {
    const { code, stderr } = await runCli(['keys', 'list'], { DATABASE_URL: url, DATABASE_CONNECT_TIMEOUT_MS: '2000' })
    assert.equal(code, 2, stderr)
    // The store's encoding is asked first, outside the migrations: no "Migration failed:" before it.
    assert.equal(stderr, 'petstore: Cannot use the PostgreSQL store that DATABASE_URL names: PostgreSQL asks for a password, and the connection URL gives none: postgres://USER:PASSWORD@HOST:PORT/DB\n')
  }
})

test('a PostgreSQL server without SSL, to a URL whose sslmode asks for it (prefer included: pg takes it for verify-full), is a setting to change: exit 2, naming the way out', async (t) => {
  // As much of a server as answers a client's SSLRequest with "N": no SSL here.
  const noSsl = createServer((socket) => {
    socket.once('data', () => { socket.write('N') })
    socket.on('error', () => {})
  })
  noSsl.listen(0, '127.0.0.1')
  await once(noSsl, 'listening')
  t.after(() => { noSsl.close() })
  const { port } = noSsl.address() as AddressInfo
  for (const mode of ['prefer', 'require']) {
    const { code, stderr } = await runCli(['keys', 'list'], { DATABASE_URL: `postgres://app:s3cret@127.0.0.1:${port}/pets?sslmode=${mode}`, DATABASE_CONNECT_TIMEOUT_MS: '2000' })
    assert.equal(code, 2, stderr)
    // (After pg's own warning on those modes.)
    assert.equal(stderr.trimEnd().split('\n').at(-1), 'petstore: Cannot use the PostgreSQL store that DATABASE_URL names: The server does not support SSL connections, which the URL asks for ' +
    '(pg, the driver, takes sslmode prefer, require and verify-ca for verify-full): set sslmode=disable for a connection without SSL, or turn SSL on in the server')
  }
})

const server = process.env.TEST_DATABASE_DIRECT_URL ?? process.env.TEST_DATABASE_URL
if (server !== undefined) {
  test('a setting the PostgreSQL server refuses as a connection opens (a value in options, a parameter it does not know) stops the start as an invalid value does: exit 2, in the server\'s words', async () => {
    for (const [options, words] of [['-c statement_timeout=abc', 'invalid value for parameter "statement_timeout": "abc"'], ['-c no_such_setting=1', 'unrecognized configuration parameter "no_such_setting"']] as const) {
      const url = new URL(server)
      url.searchParams.set('options', options)
      const { code, stderr } = await runCli(['keys', 'list'], { DATABASE_URL: url.toString() })
      assert.equal(code, 2, stderr)
      assert.equal(stderr, `petstore: Cannot use the PostgreSQL store that DATABASE_URL names: ${words}\n`)
    }
  })

  test('a DATABASE_DIRECT_URL whose database the server refuses stops the start with exit 2, before any migration: the listening connection, opened at the first read, was refused for good', { timeout: 30_000 }, async (t) => {
    const databaseUrl = await TEST_STORES.find(({ name }) => name === 'postgres')!.databaseUrl(t)
    const direct = new URL(server)
    direct.pathname = '/no_such_database'
    const { code, stderr } = await runCli(['serve'], { DATABASE_URL: databaseUrl, DATABASE_DIRECT_URL: direct.toString(), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' })
    assert.equal(code, 2, stderr)
    assert.equal(stderr, 'petstore: Cannot use the PostgreSQL connection that DATABASE_DIRECT_URL names: database "no_such_database" does not exist\n')
    const store = new pg.Client(databaseUrl)
    await store.connect()
    try {
      assert.equal((await store.query('select count(*)::int as tables from pg_tables where schemaname = \'public\'')).rows[0].tables, 0, 'nothing migrated')
    } finally {
      await store.end()
    }
  })
}
