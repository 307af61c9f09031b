import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generate } from 'selfsigned'
import { Webhook } from 'standardwebhooks'
import { systemClock } from '../../src/clock.js'
import { createWebhook } from '../../src/webhooks/webhook.repository.js'
import type { WebhookNetwork } from '../../src/webhooks/webhook-transport.js'
import { build, createPet, errorOf, type TestApp } from '../helper.js'
import { startReceiver } from './receiver.js'

// A public address (it is never dialled: the test's dial stage connects to 127.0.0.1 instead).
const PUBLIC_ADDRESS = '93.184.216.34'

const BLOCKED = [
  '127.0.0.1', '127.1.2.3', '10.0.0.7', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '198.18.0.1',
  '::1', 'fc00::1', 'fd00:ec2::254', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.7', '64:ff9b::a00:7', '::', '::7f00:1', '::a9fe:a9fe', '2001:db8::1'
]

/** A network whose names resolve as `names` says, and whose dial stage records the address and connects to 127.0.0.1:`port`. */
function fakeNetwork (names: Map<string, string[]>, port: () => number, ca?: string): WebhookNetwork & { dialled: string[] } {
  const dialled: string[] = []
  return {
    dialled,
    resolve: async (hostname) => names.get(hostname) ?? [],
    dial: (address) => {
      dialled.push(address)
      return connect({ host: '127.0.0.1', port: port() })
    },
    ca
  }
}

async function appOn (t: TestContext, network: WebhookNetwork): Promise<TestApp> {
  return await build(t, { env: { RATE_LIMIT_PER_MINUTE: '0', WEBHOOK_RETRY_SCHEDULE: '1d' }, limits: { webhookPollMs: 20 }, webhookNetwork: network })
}

/** The deliveries log of a subscription once it has an attempt (empty after 5 s without). */
async function firstAttempts (testApp: TestApp, id: unknown): Promise<Array<{ error: string | null }>> {
  for (let i = 0; i < 250; i++) {
    const log = (await testApp.app.inject({ url: `/v1/webhooks/${String(id)}/deliveries`, headers: testApp.auth })).json()
    if (log.length > 0) return log
    await sleep(20)
  }
  return []
}

async function register (testApp: TestApp, url: string) {
  return await testApp.app.inject({ method: 'POST', url: '/v1/webhooks', headers: testApp.auth, payload: { url, events: ['*'] } })
}

/** A certificate authority, and a certificate it signed for `hostname`. */
async function testCertificates (hostname: string): Promise<{ ca: string, key: string, cert: string }> {
  const authority = await generate([{ name: 'commonName', value: 'petstore test CA' }], {
    keySize: 2048, algorithm: 'sha256', extensions: [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true }]
  })
  const leaf = await generate([{ name: 'commonName', value: hostname }], {
    keySize: 2048,
    algorithm: 'sha256',
    ca: { key: authority.private, cert: authority.cert },
    extensions: [{ name: 'basicConstraints', cA: false }, { name: 'subjectAltName', altNames: [{ type: 2, value: hostname }] }]
  })
  return { ca: authority.cert, key: leaf.private, cert: leaf.cert }
}

test('a URL naming an address that is not public is refused with 422, for every blocked range', async (t) => {
  const testApp = await appOn(t, fakeNetwork(new Map(), () => 0))
  for (const address of BLOCKED) {
    const host = address.includes(':') ? `[${address}]` : address
    const response = await register(testApp, `https://${host}/hook`)
    assert.equal(response.statusCode, 422, address)
    assert.match(errorOf(response).message, /^The webhook URL is refused: .* is not a public address; webhooks reach public addresses only$/, address)
  }
  // Other spellings of 127.0.0.1, read as URLs read them.
  for (const url of ['https://2130706433/', 'https://0x7f.1/', 'https://127.1/', 'https://[::ffff:7f00:1]/']) {
    assert.equal(errorOf(await register(testApp, url)).code, 'webhook_url_refused', url)
  }
  assert.match(errorOf(await register(testApp, 'http://hooks.example.com/')).message, /it must use https, not http$/)
  // Without `scheme://`, what the parser takes for a scheme is a user name, perhaps a token: not quoted.
  assert.match(errorOf(await register(testApp, 'tok3n:pass@hooks.example.com/x')).message, /it must use https, which it does not start with$/)
  assert.match(errorOf(await register(testApp, ' http:hooks.example.com/')).message, /it must use https, not http$/)
  // A URL that could never be delivered to, or that holds what is never sent.
  assert.equal(errorOf(await register(testApp, 'https://hooks.example.com:0/')).message, 'The webhook URL is refused: its port must be from 1 to 65535')
  assert.equal(errorOf(await register(testApp, 'https://hooks.example.com/hook#part')).message, 'The webhook URL is refused: it must not hold a fragment (#part), which is never sent')
  // An empty fragment is still a fragment: the URL's `hash` is empty, its text ends in `#`.
  assert.equal(errorOf(await register(testApp, 'https://hooks.example.com/hook#')).message, 'The webhook URL is refused: it must not hold a fragment (#), which is never sent')
  // Within the 2,048 characters sent, but past them as parsed and stored, non-ASCII characters percent-encoded:
  // answered as it is stored, past the maxLength its schema declares.
  assert.equal(errorOf(await register(testApp, `https://hooks.example.com/${'é'.repeat(2000)}`)).message,
    'The webhook URL is refused: it is 12,026 characters once parsed (non-ASCII characters percent-encoded, as it is stored and sent); at most 2,048 are taken')
  assert.equal((await testApp.app.inject({ url: '/v1/webhooks', headers: testApp.auth })).json().length, 0, 'nothing was stored')
})

test('a name under localhost is refused with 422 whether or not it resolves here (RFC 6761)', async (t) => {
  const testApp = await appOn(t, fakeNetwork(new Map(), () => 0))
  for (const [url, hostname] of [['https://localhost./hook', 'localhost.'], ['https://LOCALHOST./hook', 'localhost.'], ['https://hooks.localhost/hook', 'hooks.localhost'], ['https://a.b.localhost./hook', 'a.b.localhost.'],
    // More than the root's dot: no resolver here knew the name, so it passed.
    ['https://localhost../hook', 'localhost..'], ['https://LOCALHOST%2e./hook', 'localhost..']]) {
    const response = await register(testApp, url!)
    assert.equal(response.statusCode, 422, url)
    assert.equal(errorOf(response).message, `The webhook URL is refused: ${hostname} names this machine; webhooks reach public addresses only`)
  }
})

test('a host name resolving to an address that is not public is refused with 422, even beside a public one', async (t) => {
  const names = new Map(BLOCKED.map((address, index) => [`internal-${index}.example.test`, [address]]))
  names.set('mixed.example.test', [PUBLIC_ADDRESS, '10.0.0.7'])
  names.set('localhost', ['127.0.0.1', '::1'])
  const testApp = await appOn(t, fakeNetwork(names, () => 0))
  for (const name of names.keys()) {
    const response = await register(testApp, `https://${name}/hook`)
    assert.equal(response.statusCode, 422, name)
    // The address is not told: the caller could map a private network's names with it.
    if (name.startsWith('internal-')) assert.equal(errorOf(response).message, `The webhook URL is refused: ${name} resolves to an address that is not public; webhooks reach public addresses only`)
  }
})

test('the check is made on the address dialled at each connection: a public receiver is reached over TLS, a name rebound to a private address is not', async (t) => {
  const certificates = await testCertificates('hooks.example.test')
  const receiver = await startReceiver(t, { tls: certificates, hostname: 'hooks.example.test' })
  const names = new Map([['hooks.example.test', [PUBLIC_ADDRESS]], ['rebound.example.test', [PUBLIC_ADDRESS]]])
  const network = fakeNetwork(names, () => receiver.port, certificates.ca)
  const testApp = await appOn(t, network)

  const created = await register(testApp, receiver.url)
  assert.equal(created.statusCode, 201, created.body)
  const { id, secret } = created.json()
  const rebound = await register(testApp, `https://rebound.example.test:${receiver.port}/hook`)
  assert.equal(rebound.statusCode, 201, 'it resolved to a public address when registered')
  // DNS rebinding: the name now resolves inside.
  names.set('rebound.example.test', ['10.0.0.7'])

  const rex = await createPet(testApp, { name: 'Rex', categoryId: 3 })
  const [delivery] = await receiver.waitFor(1)
  assert.equal(JSON.parse(delivery!.body).data.id, rex.id)
  new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>)

  const reboundId = rebound.json().id
  const log = await firstAttempts(testApp, reboundId)
  assert.equal(log[0]?.error, 'rebound.example.test resolves to an address that is not public')
  assert.deepEqual(network.dialled, [PUBLIC_ADDRESS], 'only the public address was dialled, once')
  assert.equal(receiver.received.length, 1)
  assert.equal((await testApp.app.inject({ url: `/v1/webhooks/${id}`, headers: testApp.auth })).json().lastError, null)
})

test('the test certificate authority is trusted by that network only: without it the receiver\'s certificate is refused', async (t) => {
  const certificates = await testCertificates('hooks.example.test')
  const receiver = await startReceiver(t, { tls: certificates, hostname: 'hooks.example.test' })
  const testApp = await appOn(t, fakeNetwork(new Map([['hooks.example.test', [PUBLIC_ADDRESS]]]), () => receiver.port))
  const { id } = (await register(testApp, receiver.url)).json()
  await createPet(testApp, { name: 'Rex', categoryId: 3 })
  const log = await firstAttempts(testApp, id)
  assert.match(log[0]?.error ?? '', /certificate/i)
  assert.equal(receiver.received.length, 0)
})

test('a subscription to an http URL, made while private addresses were allowed, gets nothing once they are not', async (t) => {
  const receiver = await startReceiver(t)
  const network = fakeNetwork(new Map([['hooks.example.test', [PUBLIC_ADDRESS]]]), () => receiver.port)
  const testApp = await appOn(t, network)
  const { webhook } = await createWebhook(testApp.db, systemClock, { url: `http://hooks.example.test:${receiver.port}/hook`, events: ['*'] }, 100) as { webhook: { id: bigint } }
  await createPet(testApp, { name: 'Rex', categoryId: 3 })
  const log = await firstAttempts(testApp, webhook.id)
  assert.equal(log[0]?.error, 'http is refused: webhooks use https (WEBHOOK_ALLOW_PRIVATE is off)')
  assert.deepEqual(network.dialled, [])
})
