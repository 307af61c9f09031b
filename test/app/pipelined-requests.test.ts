import assert from 'node:assert/strict'
import { once } from 'node:events'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import Fastify from 'fastify'
import pipelinedRequests from '../../src/plugins/pipelined-requests.js'
import { build, connectRaw, createPet, forEachStore, openRawConnection, tempDir, waitFor } from '../helper.js'
import { startServer } from '../process.js'

forEachStore((store) => {
  test('requests pipelined after creates on one connection see what the creates did (RFC 9112 section 9.3.2)', async (t) => {
    const testApp = await build(t, { store })
    const { socket, received } = await openRawConnection(testApp)
    const categoryId = 77
    const create = (name: string) => {
      const body = JSON.stringify({ name, categoryId })
      return `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    }
    const list = `GET /v1/pets?categoryId=${categoryId} HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\nConnection: close\r\n\r\n`
    const read = list.replace('Connection: close\r\n', '')
    // One write: the server parses all five at once. Both reads come after both creates.
    socket.write(create('First') + create('Second') + read + read + list)
    await once(socket, 'close')
    const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
    assert.deepEqual(answers.map((answer) => answer.slice(0, 12)), ['HTTP/1.1 201', 'HTTP/1.1 201', 'HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200'])
    for (const answer of answers.slice(2)) {
      const page = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Array<{ name: string }>
      assert.deepEqual(page.map(({ name }) => name), ['First', 'Second'], 'a list pipelined after the creates missed them')
    }
  })
})

/**
 * Has `connections` clients each pipeline `requests` GETs of `path` in one write (which Node parses at
 * once: 64 KiB) and never read what comes back; resolves with the most `measure` of the service
 * passed its figure before, over the next second.
 */
async function growthUnderUnreadPipelines (t: TestContext, path: string, connections: number, requests: number, measure: (pid: number) => number): Promise<number> {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` })
  const pid = server.child.pid!
  const before = measure(pid)
  const port = Number(new URL(server.url).port)
  const clients = Array.from({ length: connections }, () => {
    const client = connectRaw(port)
    client.socket.pause()
    client.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(requests))
    return client
  })
  t.after(() => { for (const { socket } of clients) socket.destroy() })
  let most = before
  for (let i = 0; i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    most = Math.max(most, measure(pid))
  }
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200, 'it serves')
  return most - before
}

test('answers pipelined to clients that do not read hold little: 1,400 requests a connection for the OpenAPI document (155 KB, made once) cost the service tens of MB, not gigabytes', async (t) => {
  const rss = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
  const grown = await growthUnderUnreadPipelines(t, '/v1/openapi.json', 4, 1400, rss)
  assert.ok(grown < 100, `the service grew by ${grown.toFixed(0)} MB`)
})

test('files pipelined to clients that do not read are opened a few at a time: 1,000 requests a connection for the docs page\'s script hold tens of descriptors, not thousands', async (t) => {
  const descriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length
  const opened = await growthUnderUnreadPipelines(t, '/docs/static/swagger-ui-bundle.js', 2, 1000, descriptors)
  assert.ok(opened < 100, `${opened} more descriptors open`)
})

test('fifty requests pipelined in one write, past the nine worked on together, are all answered, in order', async (t) => {
  const testApp = await build(t)
  for (let categoryId = 1; categoryId <= 50; categoryId++) await createPet(testApp, { name: `Pet ${categoryId}`, categoryId })
  const { socket, received } = await openRawConnection(testApp)
  const requests = Array.from({ length: 50 }, (_, i) => `GET /v1/pets?categoryId=${i + 1} HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\n${i === 49 ? 'Connection: close\r\n' : ''}\r\n`)
  socket.write(requests.join(''))
  await once(socket, 'close')
  const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
  assert.equal(answers.length, 50)
  for (const answer of answers) assert.match(answer, /^HTTP\/1\.1 200 /)
  const names = answers.map((answer) => (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Array<{ name: string }>).map(({ name }) => name))
  assert.deepEqual(names, requests.map((_, i) => [`Pet ${i + 1}`]))
})

test('a request asking to upgrade the connection is answered with Connection: close: Node drops what was pipelined after it, which would never be answered', async (t) => {
  const testApp = await build(t)
  const { socket, received, closed } = await openRawConnection(testApp)
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n')
  const ended = await Promise.race([closed.then(() => true), new Promise((resolve) => setTimeout(resolve, 3000, false))])
  assert.ok(ended, `the connection stays open, the second request unanswered:\n${received()}`)
  assert.match(received(), /^HTTP\/1\.1 200 OK\r\n(?:[^\r\n]+\r\n)*?connection: close\r\n/i)
})

test('requests waiting behind others on a connection the client cuts are let go (refused), not left waiting: Node emits nothing on the answers queued there', async (t) => {
  const app = Fastify()
  t.after(() => app.close())
  let entered = 0
  let released = 0
  let refused = 0
  app.addHook('onRequest', (_request, _reply, done) => { entered++; done() })
  await app.register(pipelinedRequests)
  app.addHook('onRequest', (_request, _reply, done) => { released++; done() })
  app.setErrorHandler(async (_error, _request, reply) => {
    refused++
    return await reply.code(400).send()
  })
  app.get('/slow', async () => {
    await new Promise((resolve) => setTimeout(resolve, 100))
    return { ok: true }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { socket } = connectRaw((app.server.address() as AddressInfo).port)
  await once(socket, 'connect')
  socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(30))
  while (entered < 30) await new Promise((resolve) => setTimeout(resolve, 5))
  socket.destroy()
  await waitFor(() => released + refused === entered, () => `${entered} requests: ${released} went on, ${refused} refused`, { withinMs: 2000, everyMs: 10 })
})

test('a connection with more than 1,000 requests waiting behind unfinished answers (an event stream) is closed: each held memory for as long as the stream', async (t) => {
  const app = Fastify()
  t.after(async () => {
    app.server.closeAllConnections()
    await app.close()
  })
  await app.register(pipelinedRequests)
  app.get('/stream', { config: { endless: true } }, (_request, reply) => {
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' })
    reply.raw.write(': connected\n\n')
  })
  app.get('/ping', async () => ({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { socket, received } = connectRaw((app.server.address() as AddressInfo).port)
  await once(socket, 'connect')
  socket.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n')
  while (!received().includes(': connected')) await new Promise((resolve) => setTimeout(resolve, 5))
  const closed = once(socket, 'close')
  socket.write('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(999))
  const early = await Promise.race([closed.then(() => true), new Promise((resolve) => setTimeout(resolve, 300, false))])
  assert.equal(early, false, 'a thousand waiting are kept')
  socket.write('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(10))
  const ended = await Promise.race([closed.then(() => true), new Promise((resolve) => setTimeout(resolve, 3000, false))])
  assert.ok(ended, 'the connection stays open, its requests held')
})

test('files sent in answers queued behind others are closed with a connection the client cuts: five such connections leave none open', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` })
  const port = Number(new URL(server.url).port)
  const script = 'swagger-ui-bundle.js'
  const scriptsOpen = () => readdirSync(`/proc/${server.child.pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${server.child.pid}/fd/${fd}`).endsWith(script)
    } catch {
      return false // closed meanwhile
    }
  }).length
  let most = 0
  for (let i = 0; i < 5; i++) {
    const { socket } = connectRaw(port)
    socket.pause()
    await once(socket, 'connect')
    socket.write(`GET /docs/static/${script} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(20))
    await new Promise((resolve) => setTimeout(resolve, 200))
    most = Math.max(most, scriptsOpen())
    socket.destroy()
  }
  assert.ok(most > 0, 'the files were open while the connections were')
  await waitFor(() => scriptsOpen() === 0, () => `the script left open ${scriptsOpen()} times`, { withinMs: 3000, everyMs: 50 })
})
