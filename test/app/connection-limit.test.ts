import assert from 'node:assert/strict'
import { once } from 'node:events'
import { request as httpRequest } from 'node:http'
import { connect, type Socket } from 'node:net'
import { test } from 'node:test'
import { join } from 'node:path'
import { build, closesWithin, defer, halfOpenAnswered, servedWithin, tempDir } from '../helper.js'
import { connectionCounts } from '../../src/plugins/connection-limit.js'
import { startServer } from '../process.js'

test('CONNECTIONS_PER_ADDRESS counts an IPv6 client by its /64, as the rate limit does (each of its addresses had places of its own), and an IPv4-mapped address as IPv4', () => {
  const counts = connectionCounts(2)
  const first = counts.admit('2001:db8:0:7::1')
  assert.ok(first)
  assert.ok(counts.admit('2001:db8:0:7::2'))
  assert.equal(counts.admit('2001:db8:0:7:ffff::3'), undefined, 'a third address of the same /64')
  assert.ok(counts.admit('2001:db8:0:8::1'), 'another /64')
  assert.ok(counts.admit('::ffff:192.0.2.1'))
  assert.ok(counts.admit('192.0.2.1'))
  assert.equal(counts.admit('::ffff:192.0.2.1'), undefined, 'the IPv4 address, however written')
  first()
  assert.ok(counts.admit('2001:db8:0:7::9'), 'a place given back is free again')
})

test('past CONNECTIONS_PER_ADDRESS, a new connection from that address is closed at once, while another address is served', async (t) => {
  const testApp = await build(t, { env: { CONNECTIONS_PER_ADDRESS: '3' } })
  await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = testApp.app.server.address() as { port: number }
  // The server's end of each connection, by the client's port, to tell when the server has seen one close.
  const serverEnds = new Map<number, Socket>()
  testApp.app.server.on('connection', (socket: Socket) => { serverEnds.set(socket.remotePort!, socket) })
  const open = async (localAddress: string): Promise<Socket> => {
    const socket = connect({ port, host: '127.0.0.1', localAddress })
    defer(t, () => socket.destroy())
    await once(socket, 'connect')
    return socket
  }
  const listPets = async (localAddress: string) => await new Promise<number | undefined>((resolve, reject) => {
    httpRequest({ port, host: '127.0.0.1', localAddress, path: '/v1/pets', headers: testApp.auth, agent: false }, (response) => {
      response.resume()
      resolve(response.statusCode)
    }).on('error', reject).end()
  })

  const idle = [await open('127.0.0.1'), await open('127.0.0.1'), await open('127.0.0.1')]
  const refused = await open('127.0.0.1')
  assert.equal(await closesWithin(refused, 500), true, 'the fourth connection is closed at once')
  assert.equal(await closesWithin(idle[0]!, 100), false, 'the first three stay open')
  assert.equal(await listPets('127.0.0.2'), 200, 'another address is served')

  // The limit counts a connection until its 'close' on the server, whose listener comes before this one.
  const freed = once(serverEnds.get(idle[0]!.localPort!)!, 'close')
  idle[0]!.destroy()
  await freed
  assert.equal(await listPets('127.0.0.1'), 200, 'a freed slot is taken again')
})

test('a connection the server answered and closed (a 408) leaves its place among CONNECTIONS_PER_ADDRESS once a short wait for the client to close it too is over, not at the idle timeout (60 s)', async (t) => {
  const testApp = await build(t, { env: { CONNECTIONS_PER_ADDRESS: '2' }, limits: { headersTimeoutMs: 200, lingerMs: 200 } })
  await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = testApp.app.server.address() as { port: number }
  const held = await Promise.all([halfOpenAnswered(t, port, 'G'), halfOpenAnswered(t, port, 'G')])
  for (const received of held) assert.match(received, /^HTTP\/1\.1 408 /)
  const listPets = async () => (await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: testApp.auth })).status === 200
  assert.ok(await servedWithin(listPets, 2000), 'the address is served again')
})

test('an idle kept-alive connection is kept 72 s, longer than a proxy in front keeps its own (nginx, load balancers: 60 s), and the answers say so', async (t) => {
  const testApp = await build(t)
  await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = testApp.app.server.address() as { port: number }
  const response = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: testApp.auth })
  await response.arrayBuffer()
  assert.equal(response.headers.get('keep-alive'), 'timeout=72')
  assert.equal(testApp.app.server.keepAliveTimeout, 72_000)
})

test('connections refused past CONNECTIONS_PER_ADDRESS are logged once, naming TRUST_PROXY, however many follow', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, CONNECTIONS_PER_ADDRESS: '1' })
  const port = Number(new URL(server.url).port)
  const open = async () => {
    const socket = connect(port, '127.0.0.1')
    defer(t, () => socket.destroy())
    await once(socket, 'connect')
    return socket
  }
  await open()
  for (let refused = 0; refused < 3; refused++) assert.equal(await closesWithin(await open(), 2000), true, 'a connection past the limit is closed')
  const warnings = () => server.output().split('\n').filter((line) => line.includes('TRUST_PROXY')).map((line) => JSON.parse(line))
  for (let waited = 0; warnings().length === 0 && waited < 2000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
  assert.deepEqual(warnings().map(({ level, address, network, perAddress, msg }) => ({ level, address, network, perAddress, msg })), [{
    level: 40,
    address: '127.0.0.1',
    network: '127.0.0.1',
    perAddress: 1,
    msg: 'connections from 127.0.0.1 past CONNECTIONS_PER_ADDRESS (1) are closed at once; if it is a proxy or load balancer, name it in TRUST_PROXY'
  }])
})
