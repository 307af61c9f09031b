import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { build, createPet, forEachStore, type TestApp } from '../helper.js'
import { seededRandom, testSeed } from '../seeded-random.js'

const REQUESTS = 3000

type Random = () => number
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!

const METHODS = ['GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const
const PATHS = [
  '/v1/pets', '/v1/pets', '/v1/pets/1', '/v1/pets/0', '/v1/pets/-1', '/v1/pets/abc', '/v1/pets/1.5',
  '/v1/pets/99999999999999999999999', '/v1/pets/9223372036854775808', '/v1/pets/%00', '/v1/pets/%ZZ',
  '/v1/pets/%E0%A4%A', '/v1//pets', '/v1/pets/../pets', '/v1/pets/1/', '/v1/PETS', '/v1', '/', '/healthz',
  '/v1/openapi.json', '/v1/store/orders', '/v1/store/orders/1', '/v1/store/orders/0', '/v1/store/orders/abc',
  '/v1/store/orders/9223372036854775808', '/v1/categories', '/v1/categories/1', '/v1/categories/abc', '/v1/categories/0',
  '/v1/events', '/v1/events', '/v1/events/', '/v1/EVENTS', '/v1/webhooks', '/v1/webhooks', '/v1/webhooks/1', '/v1/webhooks/abc',
  '/v1/webhooks/1/rotate-secret', '/v1/webhooks/1/deliveries', '/v1/webhooks/1/deliveries/1/retry', '/v1/webhooks/0/deliveries/x/retry', '/docs', '/docs/static/../../package.json', '/%2e%2e/etc/passwd', `/v1/pets/${'9'.repeat(300)}`, `/${'a'.repeat(5000)}`
]
const QUERIES = [
  '', '', '?limit=5', '?limit=0', '?limit=101', '?limit=abc', '?limit=1.5', '?limit=-1', '?limit=1e1',
  `?${'limit=1&'.repeat(500)}`, '?status=available', '?status=AVAILABLE', '?status[]=sold', '?status[0]=sold',
  '?__proto__[admin]=1', '?constructor[prototype][admin]=1', '?__proto__=x', '?limit=%00', '?%ZZ=%ZZ',
  '?after=-1', '?after=99999999999999999999', '?after=1&after=2', '?type=pet.created', '?type=pet.created&type=nope',
  '?type[]=pet.created', `?${'type=pet.created&'.repeat(50)}`, '?categoryId=abc', '?categoryId=1', '?categoryId=0', '?cursor=AAAA', `?cursor=${'A'.repeat(5000)}`, '?cursor=%F0%9F%90%95', `?q=${'x'.repeat(20_000)}`, '?limit=5&limit=6', '?=&&=='
]
const CONTENT_TYPES = [
  'application/json', 'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json; charset=utf-16',
  'application/jsonx', 'text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', '', ';;;', undefined
]
const BODIES = [
  '{"name":"Rex","categoryId":1}', '{"name":"Rex","categoryId":1,"status":"sold"}', '{"name":"Rex"', '{"name":',
  '{', '[', '"', '', 'null', '[]', '{}', '0', 'true', `${'['.repeat(5000)}${']'.repeat(5000)}`,
  `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`, '{"name":"Rex","categoryId":1,"__proto__":{"admin":true}}',
  '{"name":"Rex","categoryId":1,"constructor":{"prototype":{"admin":true}}}', '{"name":"\\ud800","categoryId":1}',
  '{"name":"a\\u0000b","categoryId":1}', '{"name":"Rex","categoryId":99999999999999999999999999}',
  '{"name":"Rex","categoryId":1e400}', '{"name":"Rex","categoryId":-0}', '{"name":"Rex","categoryId":9223372036854775807}',
  '{"name":{"$gt":""},"categoryId":1}', `{"name":"${'x'.repeat(20_000)}","categoryId":1}`, '\u0000\u0001\u0002',
  '{"name":"Rex","categoryId":1}garbage', '{"name":"Rex","name":"Max","categoryId":1}', '\ufeff{"name":"Rex","categoryId":1}',
  // Orders for a pet that does not exist, and moves of orders that do not: the pets made before stay as they are.
  '{"petId":999999}', '{"petId":"1"}', '{"petId":-1}', '{"petId":99999999999999999999}', '{"status":"approved"}',
  '{"status":"cancelled","petId":1}', '{"status":null}',
  // Categories: a name twice in other cases, and names no category may have.
  '{"name":"Dogs"}', '{"name":"DOGS"}', '{"name":"Stra\u00dfe"}', '{"name":"STRASSE"}', '{"name":"   "}', '{"name":"Dogs","id":1}',
  // Webhooks: receivers inside, odd URLs and event lists, and changes.
  '{"url":"https://hooks.example.test/","events":["*"]}', '{"url":"https://127.0.0.1/","events":["*"]}', '{"url":"http://hooks.example.test/","events":["*"]}',
  '{"url":"https://[::1]/","events":["pet.created"]}', '{"url":"https://169.254.169.254/latest/meta-data","events":["*"]}',
  '{"url":"javascript:alert(1)","events":["*"]}', '{"url":"https://u:p@hooks.example.test/","events":["*"]}', '{"url":"","events":["*"]}',
  '{"url":"https://hooks.example.test/","events":[]}', '{"url":"https://hooks.example.test/","events":["*","*"]}', '{"url":"https://hooks.example.test/","events":"*"}',
  '{"enabled":true}', '{"enabled":"false"}', '{"events":["order.placed"],"url":"https://hooks.example.test/x"}', '{"description":null}', '{"secret":"whsec_x"}'
]

function hostileRequest (random: Random, validAuth: string): InjectOptions {
  const method = pick(random, METHODS)
  const headers: Record<string, string | string[]> = {}
  const auth = pick(random, ['valid', 'valid', 'valid', 'none', 'malformed', 'huge', 'duplicate', 'basic', 'lowercase'] as const)
  if (auth === 'valid') headers.authorization = validAuth
  if (auth === 'malformed') headers.authorization = pick(random, ['Bearer', 'Bearer ', 'Bearer ps_', '\u00ff\u00fe', 'Bearer a b c'])
  if (auth === 'huge') headers.authorization = `Bearer ${'A'.repeat(8000)}`
  if (auth === 'duplicate') headers.authorization = [validAuth, 'Bearer nope']
  if (auth === 'basic') headers.authorization = 'Basic dXNlcjpwYXNz'
  if (auth === 'lowercase') headers.authorization = validAuth.toLowerCase()
  const contentType = pick(random, CONTENT_TYPES)
  if (contentType !== undefined) headers['content-type'] = contentType
  if (random() < 0.1) headers.accept = pick(random, ['text/html', '*/*', 'application/xml'])
  if (random() < 0.05) headers['x-forwarded-for'] = '1.2.3.4, <script>'
  const withBody = method === 'POST' || method === 'PUT' || method === 'PATCH' || random() < 0.05
  return { method, url: pick(random, PATHS) + pick(random, QUERIES), headers, ...(withBody && { payload: pick(random, BODIES) }) }
}

async function snapshot (testApp: TestApp): Promise<string> {
  return (await testApp.app.inject({ url: '/v1/pets?limit=100', headers: testApp.auth })).body
}

forEachStore((store) => {
  test(`a seeded sweep of ${REQUESTS} hostile requests: no 5xx, every error the Error body, data unchanged`, async (t) => {
    const seed = testSeed()
    t.diagnostic(`seed ${seed} (replay with TEST_SEED=${seed})`)
    const random = seededRandom(seed)
    // Webhook receivers' names resolve to a public address, and connections to it reach a closed port here.
    const webhookNetwork = { resolve: async () => ['93.184.216.34'], dial: (_address: string, _port: number) => connect({ host: '127.0.0.1', port: 9 }) }
    const testApp = await build(t, { store, env: { RATE_LIMIT_PER_MINUTE: '0' }, webhookNetwork })
    for (let i = 0; i < 5; i++) await createPet(testApp, { name: `Before ${i}`, categoryId: 2 ** 53 + i })
    const before = await snapshot(testApp)

    const statuses = new Map<number, number>()
    for (let i = 0; i < REQUESTS; i++) {
      const request = hostileRequest(random, testApp.auth.authorization)
      const response = await testApp.app.inject(request)
      const where = `request ${i}: ${request.method} ${String(request.url).slice(0, 80)}`
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1)
      assert.ok(response.statusCode < 500, `${where} answered ${response.statusCode}: ${response.body.slice(0, 200)}`)
      if (response.statusCode >= 400 && request.method !== 'HEAD') {
        const body = response.json()
        assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], where)
        assert.equal(body.status, response.statusCode, where)
        assert.match(String(response.headers['content-type']), /^application\/json/, where)
      }
    }
    t.diagnostic(`${REQUESTS} requests, 5xx seen: 0, statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)

    assert.equal((await testApp.app.inject({ url: '/healthz' })).statusCode, 200, 'the server is still up')
    const after = JSON.parse(await snapshot(testApp)) as Array<{ name: string }>
    const beforePets = JSON.parse(before) as Array<{ name: string }>
    assert.deepEqual(after.slice(0, beforePets.length), beforePets, 'pets made before the sweep are unchanged')
    assert.equal(({} as Record<string, unknown>).admin, undefined, 'no prototype was polluted')
  })
})
