import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect } from 'node:net'
import { test, type TestContext } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import writeCoalescing from '../../src/plugins/write-coalescing.js'
import { GroupCommit } from '../../src/store/group-commit.js'
import { build, defer } from '../helper.js'

/** A Fastify server holding its writes, closed when the test ends. */
async function coalescingApp (t: TestContext): Promise<FastifyInstance> {
  const app = Fastify()
  defer(t, () => app.close())
  await app.register(writeCoalescing)
  return app
}

/** Counts the event loop's turns until the test ends; the function returns the current turn's number. */
function turnCounter (t: TestContext): () => number {
  let turn = 0
  let counting = true
  const countTurns = () => { turn++; if (counting) setImmediate(countTurns) }
  countTurns()
  defer(t, () => { counting = false })
  return () => turn
}

test('an answer is written at the end of the event loop turn, whole and in order', async (t) => {
  const app = await coalescingApp(t)
  const heldWhileHandling: boolean[] = []
  app.get('/:n', (request, reply) => {
    reply.send((request.params as { n: string }).n)
    // Sent, to Fastify and Node; still in the socket's stream, not yet written to the connection.
    heldWhileHandling.push(reply.sent && reply.raw.socket!.writableLength > 0)
    return reply
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const bodies = await Promise.all(['1', '2', '3'].map(async (n) => await (await fetch(`${url}/${n}`)).text()))
  assert.deepEqual(bodies, ['1', '2', '3'])
  assert.deepEqual(heldWhileHandling, [true, true, true])
})

test('a connection destroyed in the turn it was written to still sends what was written', async (t) => {
  const app = await coalescingApp(t)
  app.get('/', (_request, reply) => {
    reply.header('connection', 'close').send('last words')
    reply.raw.socket!.destroy()
    return reply
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  assert.equal(await (await fetch(url)).text(), 'last words')
})

/** Sends `count` GET requests for /1, /2... on one connection at once, then ends its side; resolves all it read. */
async function pipelined (url: string, count: number): Promise<string> {
  const { port } = new URL(url)
  const socket = connect(Number(port), '127.0.0.1')
  await once(socket, 'connect')
  const requests = Array.from({ length: count }, (_, i) => `GET /${i + 1} HTTP/1.1\r\nHost: x\r\n\r\n`)
  socket.end(requests.join(''))
  let read = ''
  for await (const chunk of socket) read += String(chunk)
  return read
}

// Connects, says so, and on a line from its stdin sends eight requests and its end at once; prints what
// it reads. The requests fill exactly the 64 KiB Node reads at a time: libuv reads on after a full
// buffer, and so reads the end in the same turn as the requests.
const PIPELINING_CLIENT = `
const socket = require('node:net').connect(Number(process.argv[1]), '127.0.0.1', () => {
  process.stdout.write('connected;')
  const request = 'GET /1 HTTP/1.1\\r\\nHost: x\\r\\nX-Padding: ' + 'x'.repeat(8151) + '\\r\\n\\r\\n'
  process.stdin.once('data', () => { socket.end(request.repeat(8)) })
})
socket.pipe(process.stdout)`

test('the answers to requests read in the same turn as the client\'s end are all sent', async (t) => {
  const app = await coalescingApp(t)
  app.get('/:n', async () => 'answer;')
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const client = spawn(process.execPath, ['-e', PIPELINING_CLIENT, new URL(url).port], { stdio: ['pipe', 'pipe', 'inherit'] })
  defer(t, () => client.kill())
  let read = ''
  client.stdout.on('data', (chunk) => { read += String(chunk) })
  while (!read.includes('connected;')) await once(client.stdout, 'data')
  client.stdin.end('go\n')
  // This loop stands still while the client sends, so that it reads the requests and the end in one turn.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300)
  await once(client, 'close')
  assert.equal(read.match(/answer;/g)?.length, 8, read)
})

test('the answers to pipelined requests are all written in the turn they are ready', async (t) => {
  const app = await coalescingApp(t)
  const turn = turnCounter(t)
  const writtenInTurn: number[] = []
  app.get('/:n', (_request, reply) => {
    reply.raw.on('finish', () => { writtenInTurn.push(turn()) })
    return reply.send('answer')
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  await pipelined(url, 3)
  assert.equal(writtenInTurn.length, 3)
  assert.deepEqual(new Set(writtenInTurn).size, 1, `answers written in turns ${writtenInTurn.join(', ')}`)
})

test('the answers of a group commit are written in the turn it commits in', async (t) => {
  const app = await coalescingApp(t)
  const turn = turnCounter(t)
  const committedInTurn = new Map<string, number>()
  const writtenInTurn = new Map<string, number>()
  // Committed as SQLite's default durability commits: in the check phase, behind a promise.
  const group = new GroupCommit<string, string>(async (items) => {
    for (const item of items) committedInTurn.set(item, turn())
    return items
  })
  app.get('/:n', async (request, reply) => {
    const { n } = request.params as { n: string }
    reply.raw.on('finish', () => { writtenInTurn.set(n, turn()) })
    return await group.add(n)
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const bodies = await Promise.all(['1', '2', '3'].map(async (n) => await (await fetch(`${url}/${n}`)).text()))
  assert.deepEqual(bodies, ['1', '2', '3'])
  assert.equal(writtenInTurn.size, 3)
  assert.deepEqual(writtenInTurn, committedInTurn)
})

test('the service holds its writes so', async (t) => {
  const { app } = await build(t)
  assert.equal(app.hasPlugin('write-coalescing'), true)
})
