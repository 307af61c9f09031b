import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { InjectOptions } from 'fastify'
import { ERROR_CODES } from '../../src/errors.js'
import { HEADER_COMPONENTS } from '../../src/openapi/response-headers.js'
import { build, errorOf } from '../helper.js'

/** A document's node, with a `$ref` to one of its components followed. */
function resolve (doc: any, node: any): any {
  if (typeof node?.$ref !== 'string') return node
  return node.$ref.slice(2).split('/').reduce((parent: any, key: string) => parent[key], doc)
}

test('GET /v1/openapi.json serves the OpenAPI 3.1 document without a key', async (t) => {
  const testApp = await build(t, { env: { PUBLIC_BASE_URL: 'https://pets.example.com/api/', STAGING_BASE_URL: 'https://staging.pets.example.com' } })
  const response = await testApp.app.inject({ url: '/v1/openapi.json' })
  assert.equal(response.statusCode, 200)
  const doc = response.json()
  assert.equal(doc.openapi, '3.1.0')
  assert.deepEqual(doc.servers, [
    { url: 'https://pets.example.com/api/v1', description: 'Production' },
    { url: 'https://staging.pets.example.com/v1', description: 'Staging' }
  ])
  assert.deepEqual(Object.keys(doc.paths).sort(), [
    '/categories', '/categories/{categoryId}', '/events', '/events/stream', '/pets', '/pets/{petId}', '/store/orders', '/store/orders/{orderId}',
    '/webhooks', '/webhooks/{webhookId}', '/webhooks/{webhookId}/deliveries', '/webhooks/{webhookId}/deliveries/{deliveryId}/retry', '/webhooks/{webhookId}/rotate-secret'
  ], 'paths are relative to the servers')
  assert.deepEqual(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', description: doc.components.securitySchemes.bearerAuth.description })
  assert.deepEqual(doc.security, [{ bearerAuth: [] }])

  assert.equal(doc.paths['/pets'].get.operationId, 'listPets')
  assert.equal(doc.paths['/pets'].post.operationId, 'createPet')
  const getPet = doc.paths['/pets/{petId}'].get
  assert.equal(getPet.operationId, 'getPet')
  assert.equal(getPet.deprecated, true)
  assert.equal(doc.paths['/pets'].get.deprecated, undefined)

  // 408, 417, 431 and 501 may answer any request, before it is read whole (declared on every operation).
  assert.deepEqual(Object.keys(doc.paths['/pets'].post.responses).sort(), ['201', '400', '401', '403', '405', '408', '409', '413', '415', '417', '422', '429', '431', '500', '501', '503'])
  assert.deepEqual(Object.keys(doc.paths['/pets'].get.responses).sort(), ['200', '400', '401', '403', '405', '408', '417', '429', '431', '500', '501', '503'])
  assert.equal(doc.paths['/pets'].post.parameters.map((p: unknown) => resolve(doc, p)).find((p: { name: string }) => p.name === 'idempotency-key').in, 'header')
  assert.deepEqual(Object.keys(getPet.responses).sort(), ['200', '400', '401', '403', '404', '405', '408', '410', '414', '417', '429', '431', '500', '501', '503'])
  assert.deepEqual(doc.components.schemas.Error.properties.code.enum, [...ERROR_CODES])
  assert.deepEqual(Object.keys(doc.components.schemas).sort(), [
    'Category', 'CreatedWebhook', 'Error', 'Event', 'NewCategory', 'NewOrder', 'NewPet', 'NewWebhook', 'Order', 'OrderStatus', 'Pet', 'PetStatus',
    'RetryQueued', 'RotatedSecret', 'Webhook', 'WebhookChanges', 'WebhookDelivery'
  ])
  assert.equal(doc.paths['/webhooks/{webhookId}'].delete.responses[204].content, undefined, 'a 204 has no body')
  const delivery = doc.webhooks.event.post
  assert.deepEqual(delivery.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/Event' }, 'the request a receiver gets is described')
  assert.deepEqual(delivery.parameters.map((p: { name: string }) => p.name), ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
  assert.deepEqual(doc.paths['/pets'].post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewPet' })
  assert.equal(doc.paths['/pets'].get.responses[200].content['application/json'].schema.items.$ref, '#/components/schemas/Pet')
  assert.deepEqual(doc.paths['/pets'].get.responses[401], { $ref: '#/components/responses/Unauthorized' })
  assert.equal(doc.components.responses.Unauthorized.content['application/json'].schema.$ref, '#/components/schemas/Error')
  assert.doesNotMatch(JSON.stringify(doc.paths), /"title"/, 'no named schema is inlined')
  assert.deepEqual(doc.paths['/pets'].get.parameters.map((p: unknown) => resolve(doc, p)).find((p: { name: string }) => p.name === 'status').schema, { $ref: '#/components/schemas/PetStatus' })
  assert.equal(doc.components.schemas.PetStatus.type, 'string')
  const newPet = doc.components.schemas.NewPet
  assert.deepEqual(newPet.required, ['name', 'categoryId'])
  assert.equal(newPet.properties.categoryId.format, 'int64')
  assert.equal(newPet.additionalProperties, false)
})

test('the document has an example for every request body and every response, and the error table', async (t) => {
  const testApp = await build(t)
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
  assert.deepEqual(doc.servers, [{ url: '/v1', description: 'This server' }])
  let responses = 0
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      const media = operation.requestBody?.content['application/json']
      if (media !== undefined) assert.ok(media.example ?? media.examples, `${method} ${path} request example`)
      if (method === 'head') {
        for (const response of Object.values(operation.responses)) assert.equal(resolve(doc, response).content, undefined, `${path} HEAD has no body`)
        continue
      }
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (status === '204') continue
        const { content } = resolve(doc, response)
        const json = content['application/json']
        // The event stream's one answer that is not JSON has its example in its schema.
        if (json === undefined) assert.ok(content['text/event-stream'].schema.examples, `${method} ${path} ${status} example`)
        else assert.ok(json.example ?? json.examples, `${method} ${path} ${status} example`)
        if (Number(status) >= 400) assert.equal(json.example.status, Number(status))
        responses++
      }
    }
  }
  assert.ok(responses >= 20)
  for (const code of ERROR_CODES) assert.match(doc.info.description, new RegExp(`\\| \`${code}\` \\| \\d{3} \\|`))
})

test('GET /docs serves the API reference page, with its own content security policy', async (t) => {
  const testApp = await build(t)
  const page = await testApp.app.inject({ url: '/docs' })
  assert.equal(page.statusCode, 200)
  assert.match(page.headers['content-type'] as string, /^text\/html/)
  assert.match(page.headers['content-security-policy'] as string, /script-src 'self'(;|$)/)
  assert.match(page.body, /swagger-ui-bundle\.js/)
  const script = await testApp.app.inject({ url: '/docs/static/swagger-ui-bundle.js' })
  assert.equal(script.statusCode, 200)
  assert.ok(script.body.length > 100_000, 'the renderer ships in the package')
  // The folder of the page's files, whose stock index.html loaded no document ("Failed to load API definition").
  for (const url of ['/docs/static/', '/docs/static/?x=1', '/docs/static/index.html', '/docs/static/%69ndex.html']) {
    const folder = await testApp.app.inject({ url })
    assert.equal(folder.statusCode, 404, url)
    assert.equal(errorOf(folder).code, 'not_found', url)
  }
  const api = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
  assert.equal(api.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", 'the API keeps the strict policy')
})

test('/docs/json and /docs/yaml, the page plugin\'s own copy of the document (its int64 bounds rounded), lead to /v1/openapi.json', async (t) => {
  const testApp = await build(t)
  for (const url of ['/docs/json', '/docs/yaml']) {
    const response = await testApp.app.inject({ url })
    assert.equal(response.statusCode, 308, url)
    // Relative, so that a proxy's path prefix is kept.
    assert.equal(response.headers.location, '../v1/openapi.json')
    assert.equal(new URL(response.headers.location, `https://example.com/api${url}`).href, 'https://example.com/api/v1/openapi.json')
    assert.doesNotMatch(response.body, /9223372036854776000/)
  }
})

test('behind a proxy path prefix named in PUBLIC_BASE_URL, /docs links its scripts and styles under that prefix', async (t) => {
  const prefixed = await build(t, { env: { PUBLIC_BASE_URL: 'https://example.com/api/' } })
  for (const url of ['/docs', '/docs/']) {
    const page = await prefixed.app.inject({ url })
    const assets = [...page.body.matchAll(/(?:href|src)="([^"]+)"/g)].map(([, link]) => new URL(link!, `https://example.com/api${url}`).pathname)
    assert.ok(assets.length >= 5, page.body)
    for (const asset of assets) {
      assert.ok(asset.startsWith('/api/docs/static/'), `${url}: ${asset}`)
      // What the proxy passes on, without its prefix.
      assert.equal((await prefixed.app.inject({ url: asset.slice('/api'.length) })).statusCode, 200, asset)
    }
  }
  const atRoot = await build(t)
  assert.match((await atRoot.app.inject({ url: '/docs' })).body, /src="\/docs\/static\/swagger-ui-bundle\.js"/)
})

test('the headers an answer carries are declared on its response in the document, as components', async (t) => {
  const testApp = await build(t, { env: { RATE_LIMIT_PER_MINUTE: '4' } })
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
  assert.deepEqual(Object.keys(doc.components.headers).sort(), Object.keys(HEADER_COMPONENTS).sort())
  const known = new Map(Object.keys(HEADER_COMPONENTS).map((name) => [name.toLowerCase(), name]))
  const check = async (path: string, method: string, request: InjectOptions) => {
    const response = await testApp.app.inject(request)
    const declared = resolve(doc, doc.paths[path][method].responses[response.statusCode])?.headers ?? {}
    const sent = Object.keys(response.headers).flatMap((header) => known.get(header) ?? [])
    assert.ok(sent.length > 0, `${method} ${path} ${response.statusCode} sends some`)
    for (const name of sent) assert.deepEqual(declared[name], { $ref: `#/components/headers/${name}` }, `${method} ${path} ${response.statusCode}: ${name}`)
    return response.statusCode
  }
  const auth = testApp.auth
  assert.equal(await check('/pets', 'post', { method: 'POST', url: '/v1/pets', headers: { ...auth, 'idempotency-key': 'k' }, payload: { name: 'Rex', categoryId: 1 } }), 201)
  assert.equal(await check('/pets', 'post', { method: 'POST', url: '/v1/pets', headers: { ...auth, 'idempotency-key': 'k' }, payload: { name: 'Rex', categoryId: 1 } }), 201)
  assert.equal(await check('/pets', 'get', { url: '/v1/pets?limit=1', headers: auth }), 200)
  assert.equal(await check('/pets/{petId}', 'get', { url: '/v1/pets/1', headers: { authorization: 'Bearer wrong' } }), 401)
  assert.equal(await check('/pets/{petId}', 'get', { method: 'DELETE', url: '/v1/pets/1', headers: auth }), 405)
  assert.equal(await check('/pets', 'get', { url: '/v1/pets', headers: auth }), 429)
  // A beta and an experimental operation's answers carry API-Stability.
  assert.equal(await check('/categories', 'get', { url: '/v1/categories', headers: { authorization: 'Bearer wrong' } }), 401)
  assert.equal(await check('/store/orders/{orderId}', 'get', { url: '/v1/store/orders/1', headers: { authorization: 'Bearer wrong' } }), 401)
  assert.equal(doc.paths['/pets'].get.responses[200].headers['API-Stability'], undefined, 'only on marked operations')
  for (const status of [405, 414]) {
    const routerAnswer = resolve(doc, doc.paths['/categories/{categoryId}'].get.responses[status])
    assert.equal(routerAnswer.headers?.['API-Stability'], undefined, `not on a ${status}, which no route's hook answers`)
    const deprecatedRouterAnswer = resolve(doc, doc.paths['/pets/{petId}'].get.responses[status])
    assert.equal(deprecatedRouterAnswer.headers?.Deprecation, undefined, `nor the deprecation's on getPet's ${status}`)
  }
  // The router's 414, before the key is read, declares no header it does not send (it declared the rate limit's).
  const idTooLong = await testApp.app.inject({ url: `/v1/pets/${'1'.repeat(8193)}`, headers: auth })
  assert.equal(idTooLong.statusCode, 414)
  assert.deepEqual(Object.keys(resolve(doc, doc.paths['/pets/{petId}'].get.responses[414]).headers ?? {}),
    Object.keys(idTooLong.headers).flatMap((header) => known.get(header) ?? []))
  // A stream refused by the rate limit says when to retry, as any 429 of it does.
  assert.deepEqual(resolve(doc, doc.paths['/events/stream'].get.responses[429]).headers['Retry-After'], { $ref: '#/components/headers/Retry-After' })
})

test('every create that takes an Idempotency-Key declares its 409 for a retry while the first is running, with Retry-After', async (t) => {
  const testApp = await build(t)
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
  const creates = Object.entries(doc.paths as Record<string, Record<string, { parameters?: unknown[], responses: Record<string, unknown> }>>)
    .flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ name: `${method} ${path}`, operation })))
    .filter(({ operation }) => operation.parameters?.some((parameter) => resolve(doc, parameter).name.toLowerCase() === 'idempotency-key'))
  assert.deepEqual(creates.map(({ name }) => name).sort(), ['post /categories', 'post /pets', 'post /store/orders', 'post /webhooks'])
  for (const { name, operation } of creates) {
    const conflict = resolve(doc, operation.responses[409])
    assert.match(conflict.description, /`Idempotency-Key` is still being processed/, name)
    assert.deepEqual(conflict.headers?.['Retry-After'], { $ref: '#/components/headers/Retry-After' }, name)
  }
})

test('the documented 400, 404, 405 and 414 examples are the answers the server gives', async (t) => {
  const testApp = await build(t)
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
  const headers = testApp.auth
  // For each operation and status, a request that gets the documented answer (the store is empty).
  const requests: Record<string, Record<string, InjectOptions>> = {
    'get /pets': { 400: { url: '/v1/pets?limit=0' } },
    'post /pets': { 400: { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 0 } } },
    'get /pets/{petId}': { 400: { url: '/v1/pets/abc' }, 404: { url: '/v1/pets/42' } },
    'get /categories': { 400: { url: '/v1/categories?limit=0' } },
    'get /events': { 400: { url: '/v1/events?type=pet.deleted' } },
    'get /events/stream': { 400: { url: '/v1/events/stream?type=pet.deleted' } },
    'post /categories': { 400: { method: 'POST', url: '/v1/categories', payload: { name: '   ' } } },
    'get /categories/{categoryId}': { 400: { url: '/v1/categories/abc' }, 404: { url: '/v1/categories/3' } },
    'get /store/orders': { 400: { url: '/v1/store/orders?limit=0' } },
    'post /store/orders': { 400: { method: 'POST', url: '/v1/store/orders', payload: { petId: 0 } } },
    'get /store/orders/{orderId}': { 400: { url: '/v1/store/orders/abc' }, 404: { url: '/v1/store/orders/7' } },
    'patch /store/orders/{orderId}': {
      400: { method: 'PATCH', url: '/v1/store/orders/abc', payload: { status: 'approved' } },
      404: { method: 'PATCH', url: '/v1/store/orders/7', payload: { status: 'approved' } }
    },
    'get /webhooks': { 400: { url: '/v1/webhooks?limit=0' } },
    'post /webhooks': { 400: { method: 'POST', url: '/v1/webhooks', payload: { url: 'https://hooks.example.com/', events: ['pet.deleted'] } } },
    'get /webhooks/{webhookId}': { 400: { url: '/v1/webhooks/abc' }, 404: { url: '/v1/webhooks/7' } },
    'patch /webhooks/{webhookId}': { 400: { method: 'PATCH', url: '/v1/webhooks/abc', payload: { enabled: true } }, 404: { method: 'PATCH', url: '/v1/webhooks/7', payload: { enabled: true } } },
    'delete /webhooks/{webhookId}': { 400: { method: 'DELETE', url: '/v1/webhooks/abc' }, 404: { method: 'DELETE', url: '/v1/webhooks/7' } },
    'post /webhooks/{webhookId}/rotate-secret': { 400: { method: 'POST', url: '/v1/webhooks/abc/rotate-secret' }, 404: { method: 'POST', url: '/v1/webhooks/7/rotate-secret' } },
    'get /webhooks/{webhookId}/deliveries': { 400: { url: '/v1/webhooks/7/deliveries?limit=0' }, 404: { url: '/v1/webhooks/7/deliveries' } },
    'post /webhooks/{webhookId}/deliveries/{deliveryId}/retry': {
      400: { method: 'POST', url: '/v1/webhooks/7/deliveries/abc/retry' },
      404: { method: 'POST', url: '/v1/webhooks/7/deliveries/311/retry' }
    }
  }
  let compared = 0
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      if (method === 'head') continue
      for (const status of ['400', '404', '405', '414']) {
        const documented = resolve(doc, operation.responses[status])?.content['application/json'].example
        if (documented === undefined) continue
        // A 405 example names the method it answers; a 414 is any id too long.
        const request = status === '405' ?
            { method: documented.message.split(' ')[0], url: `/v1${path.replace(/\{\w+\}/, '1')}` } :
          status === '414' ? { method: method.toUpperCase() as 'GET', url: `/v1${path.replace(/\{\w+\}/, '1'.repeat(8193))}` } : requests[`${method} ${path}`]?.[status]
        assert.ok(request !== undefined, `a request for ${method} ${path} ${status}`)
        const response = await testApp.app.inject({ ...request, headers })
        assert.deepEqual(response.json(), documented, `${method} ${path} ${status}`)
        compared++
      }
    }
  }
  assert.equal(compared, 60)
})

test('a validator that does not know the pet-name format refuses the names the server refuses, and only those', async (t) => {
  const testApp = await build(t)
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
  const validate = new Ajv2020({ strict: false, validateFormats: false }).compile(doc.components.schemas.NewPet.properties.name)
  // U+0085, whitespace to the server, is not to \S: the pattern let a name of it alone pass.
  for (const name of ['', ' ', ' \t\n\u00a0\u2003\ufeff', '\u0085', ' \u0085 ', 'Re\u0000x', 'Re\ud800x', '\udc00']) {
    assert.equal(validate(name), false, JSON.stringify(name))
    const refused = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 1 } })
    assert.equal(refused.json().message, '`name` must be 1 to 100 characters once whitespace at both ends is trimmed, in well-formed Unicode without U+0000')
  }
  // 100 characters once trimmed, as code points: an emoji or a combining accent counts one.
  const longest = ['x'.repeat(100), ` \u0085${'x'.repeat(100)}\t `, '🐕'.repeat(100), 'e\u0301'.repeat(50), `R${' '.repeat(98)}x`]
  const tooLong = ['x'.repeat(101), ` ${'x'.repeat(101)} `, '🐕'.repeat(101), 'e\u0301'.repeat(50) + 'e', `R${' '.repeat(99)}x`]
  for (const name of ['Rex', ' Rex ', '🐕', 'a\u0085b', ...longest]) assert.equal(validate(name), true, JSON.stringify(name))
  for (const name of tooLong) {
    assert.equal(validate(name), false, JSON.stringify(name))
    const refused = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 1 } })
    assert.equal(refused.statusCode, 400, JSON.stringify(name))
  }
  // As read by validators that compile patterns without the u flag (generated zod schemas, say).
  const withoutU = new RegExp(doc.components.schemas.NewPet.properties.name.pattern)
  for (const name of ['Rex 🐕', ...longest]) assert.equal(withoutU.test(name), true, JSON.stringify(name))
  for (const name of ['Re\ud800x', '\udc00', ' ', '\u0085', 'Re\u0000x', ...tooLong]) assert.equal(withoutU.test(name), false, JSON.stringify(name))
})

test('error responses and parameters are reusable components; HEAD is declared; int64 bounds are exact', async (t) => {
  const testApp = await build(t)
  const served = await testApp.app.inject({ url: '/v1/openapi.json' })
  const doc = served.json()
  const shared = ['BadRequest', 'Conflict', 'ContentTooLarge', 'Forbidden', 'Gone', 'InternalError', 'NotFound', 'ServiceUnavailable',
    'TooManyRequests', 'Unauthorized', 'UnprocessableContent', 'UnsupportedMediaType']
  // The beta and experimental operations' answers also declare API-Stability: they share their own,
  // but for those given before any route's hooks run, which carry none.
  const beforeRoutes = ['ExpectationFailed', 'HeaderTooLarge', 'MethodNotAllowed', 'NotImplemented', 'RequestTimeout', 'UriTooLong']
  assert.deepEqual(Object.keys(doc.components.responses).sort(), [...shared.flatMap((name) => [name, `${name}WithStability`]), ...beforeRoutes].sort())
  for (const name of ['HeaderTooLarge', 'NotImplemented']) assert.deepEqual(doc.components.responses[name].headers, {}, `${name}: none of the key's, the rate limit's or the operation's`)
  assert.deepEqual(doc.paths['/categories'].get.responses[431], { $ref: '#/components/responses/HeaderTooLarge' })
  assert.deepEqual(doc.paths['/categories'].get.responses[401], { $ref: '#/components/responses/UnauthorizedWithStability' })
  const text = JSON.stringify(doc.paths)
  for (const name of Object.keys(doc.components.responses)) assert.ok(text.includes(`"#/components/responses/${name}"`), `${name} is referenced`)
  for (const name of Object.keys(doc.components.parameters)) assert.ok(text.includes(`"#/components/parameters/${name}"`), `${name} is referenced`)
  assert.deepEqual(doc.paths['/store/orders/{orderId}'].patch.parameters, [{ $ref: '#/components/parameters/OrderId' }])
  assert.deepEqual(resolve(doc, doc.components.responses.MethodNotAllowed.headers.Allow), doc.components.headers.Allow)

  const head = doc.paths['/pets/{petId}'].head
  assert.equal(head.operationId, 'getPet-head')
  assert.equal(head.deprecated, true)
  assert.deepEqual(Object.keys(head.responses).sort(), Object.keys(doc.paths['/pets/{petId}'].get.responses).sort())
  const answer = await testApp.app.inject({ method: 'HEAD', url: '/v1/pets?limit=1', headers: testApp.auth })
  assert.equal(answer.statusCode, 200)
  assert.equal(answer.body, '')

  // JSON.stringify would write 9223372036854776000, a bound past int64's.
  assert.equal(doc.components.schemas.Pet.properties.id.format, 'int64')
  assert.match(served.body, /"format":"int64","minimum":1,"description":"Unique identifier[^}]*"maximum":9223372036854775807\}/)
  assert.doesNotMatch(served.body, /9223372036854776000/)
})

test('each operation states the scope it needs, in its security requirement and its description', async (t) => {
  const testApp = await build(t)
  const doc = (await testApp.app.inject({ url: '/v1/openapi.json' })).json()
  const scopes: Record<string, string> = {}
  for (const [path, item] of Object.entries<Record<string, { operationId: string, security: unknown, description: string }>>(doc.paths)) {
    for (const operation of Object.values(item)) {
      const scope = /Requires an API key with the scope `([^`]+)`\.$/.exec(operation.description)?.[1]
      assert.ok(scope !== undefined, `${operation.operationId} (${path}) names its scope`)
      assert.deepEqual(operation.security, [{ bearerAuth: [scope] }], operation.operationId)
      scopes[operation.operationId] = scope
    }
  }
  assert.deepEqual(scopes, {
    listPets: 'pets:read', 'listPets-head': 'pets:read', createPet: 'pets:write', getPet: 'pets:read', 'getPet-head': 'pets:read',
    listEvents: 'events:read', 'listEvents-head': 'events:read', streamEvents: 'events:read',
    listCategories: 'categories:read', 'listCategories-head': 'categories:read', createCategory: 'categories:write', getCategory: 'categories:read', 'getCategory-head': 'categories:read',
    listOrders: 'orders:read', 'listOrders-head': 'orders:read', createOrder: 'orders:write', getOrder: 'orders:read', 'getOrder-head': 'orders:read', updateOrderStatus: 'orders:write',
    listWebhooks: 'webhooks:read', 'listWebhooks-head': 'webhooks:read', createWebhook: 'webhooks:write', getWebhook: 'webhooks:read', 'getWebhook-head': 'webhooks:read',
    updateWebhook: 'webhooks:write', deleteWebhook: 'webhooks:write', rotateWebhookSecret: 'webhooks:write',
    listWebhookDeliveries: 'webhooks:read', 'listWebhookDeliveries-head': 'webhooks:read', retryWebhookDelivery: 'webhooks:write'
  })
})
