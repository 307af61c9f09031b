import assert from 'node:assert/strict'
import { test } from 'node:test'
import { forEachStore } from '../helper.js'
import { runCli, startServer } from '../process.js'

forEachStore((store) => {
  const KEY_LINE = /^ps_[0-9A-Za-z]{38}$/m

  test('the first start prints one key; a restart prints none and keeps every pet', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const first = await startServer(t, env)
    const key = KEY_LINE.exec(first.output())?.[0]
    assert.ok(key, first.output())
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const created = await fetch(`${first.url}/v1/pets`, { method: 'POST', headers, body: '{"name":"Rex","categoryId":9007199254740993}' })
    assert.equal(created.status, 201)
    const pet = await created.text()
    assert.equal(await first.stop('SIGTERM'), 0)

    const second = await startServer(t, env)
    assert.doesNotMatch(second.output(), KEY_LINE)
    const fetched = await fetch(`${second.url}/v1/pets`, { headers })
    assert.equal(await fetched.text(), `[${pet}]`)
    assert.equal(await second.stop('SIGINT'), 0)
  })

  test('a key revoked with the CLI is refused by a running server within 5 seconds', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const server = await startServer(t, env)
    const created = await runCli(['keys', 'create', '--name', 'doomed'], env)
    const key = created.stdout.trimEnd().split('\n').at(-1)!
    const id = /Created API key (\d+)/.exec(created.stdout)![1]!
    const headers = { authorization: `Bearer ${key}` }
    assert.equal((await fetch(`${server.url}/v1/pets`, { headers })).status, 200, 'a new key works at once')

    assert.equal((await runCli(['keys', 'revoke', id], env)).code, 0)
    const revokedAt = Date.now()
    let status = 200
    while (status === 200 && Date.now() - revokedAt < 6000) {
      status = (await fetch(`${server.url}/v1/pets`, { headers })).status
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal(status, 401)
    assert.ok(Date.now() - revokedAt < 5000, `refused after ${Date.now() - revokedAt} ms`)
  })

  test('SIGTERM lets in-flight requests finish and exits 0', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const server = await startServer(t, env)
    const key = KEY_LINE.exec(server.output())![0]
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const writes = Array.from({ length: 50 }, (_, i) =>
      fetch(`${server.url}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `Pet ${i}`, categoryId: 1 }) })
        .then(async (response) => ({ status: response.status, body: await response.text() }), () => ({ status: 0, body: '' })))
    await new Promise((resolve) => setTimeout(resolve, 5))
    const code = await server.stop('SIGTERM')
    const answers = await Promise.all(writes)
    assert.equal(code, 0)
    assert.ok(answers.every(({ status }) => [201, 503, 0].includes(status)), answers.map(({ status }) => status).join(','))
    const acknowledged = answers.filter(({ status }) => status === 201).map(({ body }) => body)

    const restarted = await startServer(t, env)
    const stored = await (await fetch(`${restarted.url}/v1/pets?limit=100`, { headers })).json() as unknown[]
    const storedBodies = new Set(stored.map((pet) => JSON.stringify(pet)))
    for (const body of acknowledged) assert.ok(storedBodies.has(body), `acknowledged but not stored: ${body}`)
  })

  test('npm start (the bundled build) serves the API and /docs with its files, and stops with exit 0 on SIGTERM', async (t) => {
    // Strict, so that on SQLite creates go through the bundled writer thread (a 500 if it were missing).
    const server = await startServer(t, { DATABASE_URL: await store.databaseUrl(t), DURABILITY: 'strict' }, ['npm', 'start', '--silent'])
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
    const headers = { authorization: `Bearer ${KEY_LINE.exec(server.output())![0]}`, 'content-type': 'application/json' }
    const created = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers, body: '{"name":"Rex","categoryId":1}' })
    assert.equal(created.status, 201)
    const pet = await created.json() as { id: number }
    assert.deepEqual(await (await fetch(`${server.url}/v1/pets/${pet.id}`, { headers })).json(), pet)
    // Swagger UI serves the files of its own package: the bundle must still find them.
    const docs = await (await fetch(`${server.url}/docs`)).text()
    const assets = [...docs.matchAll(/(?:src|href)="(\/docs\/static\/[^"]+)"/g)].map(([, path]) => path!)
    assert.ok(assets.length >= 3, docs)
    for (const asset of assets) assert.equal((await fetch(server.url + asset)).status, 200, asset)
    assert.equal(await server.stop('SIGTERM'), 0)
    assert.doesNotMatch(server.output(), /writer thread failed/)
  })
})
