import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { test, type TestContext } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'
import { build, closesWithin, defer, type TestApp } from '../helper.js'

/** The status of a request without a valid key, as if from `remoteAddress`, with X-Forwarded-For when given. */
async function anonymous (testApp: TestApp, remoteAddress: string, forwardedFor?: string): Promise<number> {
  const headers = { authorization: 'Bearer ps_guess', ...(forwardedFor !== undefined && { 'x-forwarded-for': forwardedFor }) }
  return (await testApp.app.inject({ url: '/v1/pets', headers, remoteAddress })).statusCode
}

test('without TRUST_PROXY, X-Forwarded-For changes nothing: requests without a key are counted by the connection\'s address', async (t) => {
  const testApp = await build(t, { env: { RATE_LIMIT_PER_MINUTE: '2' } })
  assert.deepEqual([
    await anonymous(testApp, '127.0.0.1', '203.0.113.1'),
    await anonymous(testApp, '127.0.0.1', '203.0.113.2'),
    await anonymous(testApp, '127.0.0.1', '203.0.113.3')
  ], [401, 401, 429])
})

test('from a trusted proxy, X-Forwarded-For names the client, each with its own budget; from anyone else it is ignored', async (t) => {
  const testApp = await build(t, { env: { RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' } })
  assert.deepEqual([await anonymous(testApp, '127.0.0.1', '203.0.113.1'), await anonymous(testApp, '10.1.2.3', '203.0.113.1')], [401, 401])
  assert.equal(await anonymous(testApp, '127.0.0.1', '203.0.113.1'), 429, 'one client through two trusted proxies has one budget')
  assert.equal(await anonymous(testApp, '127.0.0.1', '203.0.113.2'), 401, 'another client has its own')
  // A client cannot pass for another by writing addresses of its own before the proxy's.
  assert.equal(await anonymous(testApp, '127.0.0.1', '198.51.100.9, 203.0.113.1'), 429)
  // From an address that is not a trusted proxy, the header is the client's own words.
  assert.deepEqual([
    await anonymous(testApp, '192.0.2.7', '203.0.113.4'),
    await anonymous(testApp, '192.0.2.7', '203.0.113.5'),
    await anonymous(testApp, '192.0.2.7', '203.0.113.6')
  ], [401, 401, 429])
})

test('requests without a key are counted by client address as an address, not as written: no port, IPv4 for IPv4-mapped, one IPv6 /64, and the proxy\'s own for what is no address', async (t) => {
  const testApp = await build(t, { env: { RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1' } })
  const budgets = [
    ['203.0.113.1:5001', '203.0.113.1:5002', '203.0.113.1'],
    ['::ffff:203.0.113.7', '0:0:0:0:0:FFFF:203.0.113.7', '203.0.113.7'],
    ['2001:db8:0:1::1', '2001:DB8:0:1:0::2', '[2001:db8:0:1:ab::3]:443'],
    // Thousands of distinct values, each a counter of its own, could have filled the memory.
    ['garbage', `x${'y'.repeat(8000)}`, '203.0.113.300']
  ]
  for (const sameClient of budgets) {
    const statuses: number[] = []
    for (const forwardedFor of sameClient) statuses.push(await anonymous(testApp, '127.0.0.1', forwardedFor))
    assert.deepEqual(statuses, [401, 401, 429], sameClient[0])
  }
  assert.equal(await anonymous(testApp, '127.0.0.1', '2001:db8:0:2::1'), 401, 'the next /64 has a budget of its own')
  assert.equal(await anonymous(testApp, '127.0.0.1'), 429, 'what was no address used up the proxy\'s own budget')
  // Without a proxy too.
  assert.deepEqual([
    await anonymous(testApp, '2001:db8:1::1'),
    await anonymous(testApp, '2001:db8:1::2'),
    await anonymous(testApp, '2001:db8:1::ab:3')
  ], [401, 401, 429])
})

async function openConnections (t: TestContext, testApp: TestApp, localAddress: string, count: number): Promise<Socket[]> {
  if (!testApp.app.server.listening) await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = testApp.app.server.address() as { port: number }
  const sockets: Socket[] = []
  for (let i = 0; i < count; i++) {
    const socket = connect({ port, host: '127.0.0.1', localAddress })
    defer(t, () => socket.destroy())
    await once(socket, 'connect')
    sockets.push(socket)
  }
  return sockets
}

test('a trusted proxy\'s connections are not held to CONNECTIONS_PER_ADDRESS, which still holds for everyone else', async (t) => {
  const testApp = await build(t, { env: { CONNECTIONS_PER_ADDRESS: '2', TRUST_PROXY: '127.0.0.1' } })
  const fromProxy = await openConnections(t, testApp, '127.0.0.1', 4)
  const fromClient = await openConnections(t, testApp, '127.0.0.2', 3)
  // The server accepts connections in the order they came: once it has closed the client's third,
  // it has seen the proxy's four, and would have closed the last two by then.
  assert.equal(await closesWithin(fromClient[2]!, 5000), true, 'the client\'s third connection is closed')
  assert.deepEqual(fromClient.map((socket) => socket.closed), [false, false, true])
  assert.deepEqual(fromProxy.map((socket) => socket.destroyed || socket.closed), [false, false, false, false])
})

test('TRUST_PROXY takes addresses and CIDRs, and refuses anything else naming the variable', () => {
  assert.equal(loadConfig({ TRUST_PROXY: '10.0.0.0/8, ::1,192.168.1.7' }).TRUST_PROXY, '10.0.0.0/8, ::1,192.168.1.7')
  assert.equal(loadConfig({ TRUST_PROXY: '::ffff:10.0.0.1,2001:db8::/32' }).TRUST_PROXY, '::ffff:10.0.0.1,2001:db8::/32')
  assert.equal(loadConfig({ TRUST_PROXY: 'fc00::/7,::ffff:10.0.0.0/104' }).TRUST_PROXY, 'fc00::/7,::ffff:10.0.0.0/104')
  // Other ways to write an IPv4 address (octal, hexadecimal, fewer parts) trusted another address than
  // the one meant (127.0.0.010 is 127.0.0.8); a /0 (every address) stopped the start with a raw error,
  // and two /1s, or every IPv4-mapped address (::ffff:0.0.0.0/96), trusted every client.
  const refused = ['proxy.internal', '10.0.0.0/33', '10.0.0.0/8;', ', ,', '*', '127.0.0.010', '010.0.0.1/8', '1', '127.1', '0x7f000002', '0.0.0.0/0', '::/0',
    '0.0.0.0/1,128.0.0.0/1', '::ffff:0.0.0.0/96', '::ffff:0.0.0.0/103', '::/1,8000::/1', '10.0.0.0/7']
  for (const value of refused) {
    assert.throws(() => loadConfig({ TRUST_PROXY: value }), (error: unknown) => error instanceof ConfigError &&
      error.message === `Invalid configuration: TRUST_PROXY is ${JSON.stringify(value)}; it must be of the form 10.0.0.0/8 or 127.0.0.1,10.1.2.0/24: ` +
      'addresses (IPv4 as four decimal numbers) or CIDRs, comma-separated; none wider than an IPv4 /8 or an IPv6 /7 (a /0, or two /1s, would let every client ' +
      'choose its own address)', value)
  }
})
