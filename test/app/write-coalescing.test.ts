import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import writeCoalescing from '../../src/plugins/write-coalescing.js'
import { build, defer } from '../helper.js'

test('an answer is written at the end of the event loop turn, whole and in order', async (t) => {
  const app = Fastify()
  defer(t, () => app.close())
  await app.register(writeCoalescing)
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
  const app = Fastify()
  defer(t, () => app.close())
  await app.register(writeCoalescing)
  app.get('/', (_request, reply) => {
    reply.header('connection', 'close').send('last words')
    reply.raw.socket!.destroy()
    return reply
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  assert.equal(await (await fetch(url)).text(), 'last words')
})

test('the service holds its writes so', async (t) => {
  const { app } = await build(t)
  assert.equal(app.hasPlugin('write-coalescing'), true)
})
