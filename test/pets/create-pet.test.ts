import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parse as parseLossless } from 'lossless-json'
import { build, clientFor, errorOf, forEachStore } from '../helper.js'

forEachStore((store) => {
  test('createPet answers 201 with the Pet, a Location and status available by default', async (t) => {
    const client = await clientFor(await build(t, { store }))
    const { data: pet, response } = await client.POST('/pets', { body: { name: 'Rex', categoryId: 3 } })
    assert.equal(response.status, 201)
    assert.deepEqual(pet, { id: pet!.id, name: 'Rex', categoryId: 3, status: 'available' })
    assert.ok(Number.isInteger(pet!.id) && pet!.id > 0)
    assert.equal(response.headers.get('location'), `/v1/pets/${pet!.id}`)
  })

  test('createPet keeps the status sent and assigns increasing ids', async (t) => {
    const client = await clientFor(await build(t, { store }))
    const ids = []
    for (const status of ['sold', 'pending', 'available'] as const) {
      const { data: pet, response } = await client.POST('/pets', { body: { name: 'Tom', categoryId: 1, status } })
      assert.equal(response.status, 201)
      assert.equal(pet!.status, status)
      ids.push(pet!.id)
    }
    assert.ok(ids[0]! < ids[1]! && ids[1]! < ids[2]!)
  })

  test('creates that arrive together (one group commit) each get a 201 with their own pet, as stored', async (t) => {
    const testApp = await build(t, { store })
    // Distinct pets and identical twins, whose ids may only be told apart by the ids themselves; names
    // that a list of values must quote; some with an Idempotency-Key, in the same groups.
    const names = ['NULL', 'a, b {c}', '"Rex" \\ O\'Brien', 'Zoë 🐈']
    const bodies = Array.from({ length: 40 }, (_, i) => i % 4 === 0 ?
        { name: 'Twin', categoryId: 5, status: 'pending' } :
        { name: names[i % 5] ?? `Pet ${i}`, categoryId: 1000 + i, status: (['available', 'sold'] as const)[i % 2] })
    const headers = (i: number) => ({ ...testApp.auth, ...(i % 3 === 0 && { 'idempotency-key': `group ${i}` }) })
    const responses = await Promise.all(bodies.map((payload, i) => testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: headers(i), payload })))
    const pets = responses.map((response) => {
      assert.equal(response.statusCode, 201)
      return response.json() as { id: number }
    })
    pets.forEach(({ id, ...content }, i) => assert.deepEqual(content, bodies[i]))
    assert.equal(new Set(pets.map((pet) => pet.id)).size, pets.length, 'ids are unique')
    for (const [i, pet] of pets.entries()) {
      const stored = await testApp.app.inject({ method: 'GET', url: `/v1/pets/${pet.id}`, headers: testApp.auth })
      assert.equal(stored.body, responses[i]!.body)
    }
    const events = await testApp.app.inject({ method: 'GET', url: '/v1/events?limit=100', headers: testApp.auth })
    const created = (events.json() as Array<{ type: string, data: { id: number } }>).filter(({ type }) => type === 'pet.created')
    assert.deepEqual(created.map(({ data }) => data), [...pets].sort((a, b) => a.id - b.id), 'one event a pet, in the order of their ids')
  })

  test('a categoryId written as a decimal or with an exponent is the integer its exact value is', async (t) => {
    const testApp = await build(t, { store })
    for (const [text, stored] of [['1.0', '1'], ['1e2', '100'], ['2.50e1', '25'], ['9223372036854775807.000', '9223372036854775807'], ['92233720368547758.07e2', '9223372036854775807']]) {
      const response = await testApp.app.inject({
        method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json' }, payload: `{"name":"Rex","categoryId":${text}}`
      })
      assert.equal(response.statusCode, 201, `${text}: ${response.body}`)
      assert.match(response.body, new RegExp(`"categoryId":${stored}[,}]`))
    }
  })

  test('Location is absolute when PUBLIC_BASE_URL is set', async (t) => {
    const testApp = await build(t, { store, env: { PUBLIC_BASE_URL: 'https://pets.example.com/' } })
    const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name: 'Rex', categoryId: 3 } })
    assert.equal(response.headers.location, `https://pets.example.com/v1/pets/${response.json().id}`)
  })

  test('categoryId round-trips exactly above 2^53, up to the int64 maximum', async (t) => {
    const testApp = await build(t, { store })
    for (const text of ['9007199254740993', '9223372036854775807', '1234567890123456789']) {
      const response = await testApp.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...testApp.auth, 'content-type': 'application/json' },
        payload: `{"name":"Big","categoryId":${text}}`
      })
      assert.equal(response.statusCode, 201, response.body)
      assert.match(response.body, new RegExp(`"categoryId":${text}[,}]`))
      const id = response.json().id
      const fetched = await testApp.app.inject({ url: `/v1/pets/${id}`, headers: testApp.auth })
      assert.match(fetched.body, new RegExp(`"categoryId":${text}[,}]`))
      const listed = await testApp.app.inject({ url: '/v1/pets?limit=100', headers: testApp.auth })
      assert.match(listed.body, new RegExp(`"categoryId":${text}[,}]`))
    }
  })

  const INVALID_BODIES: Array<[string, string | Buffer]> = [
    ['categoryId as a string', '{"name":"Rex","categoryId":"5"}'],
    ['categoryId a fraction', '{"name":"Rex","categoryId":1.5}'],
    ['categoryId a fraction a double would round to 1', '{"name":"Rex","categoryId":1.00000000000000001}'],
    ['categoryId a fraction past 2^52', '{"name":"Rex","categoryId":4503599627370496.5}'],
    ['categoryId an exponent past int64', '{"name":"Rex","categoryId":1e19}'],
    ['categoryId a huge exponent', '{"name":"Rex","categoryId":1e999999999}'],
    ['categoryId zero', '{"name":"Rex","categoryId":0}'],
    ['categoryId negative', '{"name":"Rex","categoryId":-1}'],
    ['categoryId past int64', '{"name":"Rex","categoryId":9223372036854775808}'],
    ['categoryId far past int64', '{"name":"Rex","categoryId":123456789012345678901234567890}'],
    ['categoryId null', '{"name":"Rex","categoryId":null}'],
    ['categoryId missing', '{"name":"Rex"}'],
    ['name missing', '{"categoryId":1}'],
    ['name empty', '{"name":"","categoryId":1}'],
    ['name only spaces', '{"name":"   ","categoryId":1}'],
    ['name of 101 characters', JSON.stringify({ name: 'x'.repeat(101), categoryId: 1 })],
    ['name not a string', '{"name":42,"categoryId":1}'],
    ['name with a lone surrogate', '{"name":"a\\ud800b","categoryId":1}'],
    ['name with a NUL', '{"name":"a\\u0000b","categoryId":1}'],
    ['status unknown', '{"name":"Rex","categoryId":1,"status":"lost"}'],
    ['status in the wrong case', '{"name":"Rex","categoryId":1,"status":"Available"}'],
    ['an unknown field', '{"name":"Rex","categoryId":1,"color":"red"}'],
    ['a client-chosen id', '{"id":5,"name":"Rex","categoryId":1}'],
    ['an array', '[{"name":"Rex","categoryId":1}]'],
    ['a string', '"Rex"'],
    ['null', 'null'],
    ['prototype pollution', '{"name":"Rex","categoryId":1,"__proto__":{"admin":true}}'],
    ['constructor pollution', '{"name":"Rex","categoryId":1,"constructor":{"prototype":{"admin":true}}}'],
    ['malformed JSON', '{"name":"Rex",'],
    ['an empty body', ''],
    ['invalid UTF-8', Buffer.concat([Buffer.from('{"name":"R'), Buffer.from([0xff, 0xfe]), Buffer.from('x","categoryId":1}')])],
    ['big-integer text with pollution', '{"name":"Rex","categoryId":12345678901234567,"__proto__":{"x":1}}']
  ]

  for (const [what, payload] of INVALID_BODIES) {
    test(`createPet answers 400 for ${what}`, async (t) => {
      const testApp = await build(t, { store })
      const response = await testApp.app.inject({
        method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json' }, payload
      })
      assert.equal(response.statusCode, 400, response.body)
      assert.match(errorOf(response).code, /^(validation_failed|invalid_json)$/)
      const list = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
      assert.deepEqual(list.json(), [], 'nothing is stored')
    })
  }

  test('errors say what to fix, in a sentence naming the field, every missing field, or the place in the JSON', async (t) => {
    const testApp = await build(t, { store })
    const send = (payload: string) => testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json' }, payload })
    const cases: Array<[string, string, string]> = [
      ['{}', 'validation_failed', 'The body is missing the required fields `name` and `categoryId`'],
      ['{"categoryId":1}', 'validation_failed', 'The body is missing the required field `name`'],
      ['{"name":42,"categoryId":1}', 'validation_failed', '`name` must be a string'],
      ['{"name":"Rex","categoryId":0}', 'validation_failed', '`categoryId` must be an integer from 1 to 9223372036854775807'],
      ['{"name":"Rex","categoryId":1,"status":"x"}', 'validation_failed', '`status` must be one of available, pending, sold'],
      ['{"name":"Rex","categoryId":1,"color":"red"}', 'validation_failed', 'The body has an unknown field `color`'],
      ['[]', 'validation_failed', 'The body must be an object'],
      // The rule names what is refused besides the length: a name of the right length can fail it.
      ['{"name":"Rex\\u0000","categoryId":1}', 'validation_failed', '`name` must be 1 to 100 characters once whitespace at both ends is trimmed, in well-formed Unicode without U+0000'],
      ['{"name":"Rex\\ud800","categoryId":1}', 'validation_failed', '`name` must be 1 to 100 characters once whitespace at both ends is trimmed, in well-formed Unicode without U+0000'],
      ['{"name":"Rex","categoryId":1,"__proto__":{"admin":true}}', 'validation_failed',
        'The keys `__proto__` and `constructor.prototype` are refused wherever they appear: they could change the prototype of objects built from this JSON'],
      [`{"name":"Rex","categoryId":12345678901234567,"x":${'['.repeat(8000)}${']'.repeat(8000)}}`, 'validation_failed',
        'The body nests arrays or objects too deeply to be read with its numbers exact'],
      ['{"name":"Rex",\n "categoryId": }', 'invalid_json', 'Request body is not valid JSON: unexpected "}" where a value was expected at line 2, column 16'],
      ['{"name":"Rex" "categoryId":1}', 'invalid_json', 'Request body is not valid JSON: unexpected "\\"" where a "," or a closing bracket was expected at line 1, column 15'],
      ['{"name":"Rex",', 'invalid_json', 'Request body is not valid JSON: the text ends before the JSON value is complete at line 1, column 15'],
      // Columns count UTF-16 code units, as the README says: the emoji counts two.
      ['{"name":"🐶" x}', 'invalid_json', 'Request body is not valid JSON: unexpected "x" at line 1, column 14'],
      // Quoted as \u escapes, as input is wherever a message quotes it: raw, a bidi override (U+202E), a C1
      // control (U+009B, which starts a terminal's escape sequences), DEL or a line separator changes
      // how a terminal shows the rest of the line that prints the message.
      ...['\u202e', '\u009b', '\u007f', '\u2028'].map((character): [string, string, string] => [`{"name":"Rex"${character}}`, 'invalid_json',
        `Request body is not valid JSON: unexpected "\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}" at line 1, column 14`])
    ]
    for (const [payload, code, message] of cases) {
      const error = errorOf(await send(payload))
      assert.deepEqual([error.code, error.message], [code, message], payload)
    }
  })

  test('a body that is not there, with or without a Content-Type, is told empty, as the README says (not that it must be an object)', async (t) => {
    const testApp = await build(t, { store })
    for (const headers of [{}, { 'content-length': '0' }, { 'content-type': 'application/json' }]) {
      for (const [method, url] of [['POST', '/v1/pets'], ['POST', '/v1/store/orders'], ['POST', '/v1/categories']] as const) {
        const response = await testApp.app.inject({ method, url, headers: { ...testApp.auth, ...headers } })
        assert.deepEqual(errorOf(response), { code: 'invalid_json', message: 'Request body is empty; a JSON object is expected', status: 400 }, `${url} ${JSON.stringify(headers)}`)
      }
    }
  })

  const VALID_NAMES: Array<[string, string]> = [
    ['100 characters', 'x'.repeat(100)],
    ['100 characters inside spaces, stored as sent', `  ${'y'.repeat(100)}  `],
    ['100 emoji', '🐕'.repeat(100)],
    ['one character', 'R'],
    ['non-Latin text', 'Кот Барсик 🐈 ねこ']
  ]

  for (const [what, name] of VALID_NAMES) {
    test(`createPet accepts a name of ${what}`, async (t) => {
      const testApp = await build(t, { store })
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 1 } })
      assert.equal(response.statusCode, 201, response.body)
      assert.equal(response.json().name, name)
      const fetched = await testApp.app.inject({ url: `/v1/pets/${response.json().id}`, headers: testApp.auth })
      assert.equal(fetched.json().name, name)
    })
  }

  test('createPet answers 415 for bodies that are not JSON in UTF-8', async (t) => {
    const testApp = await build(t, { store })
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/json; charset=latin1', undefined]) {
      const headers: Record<string, string> = { ...testApp.auth }
      if (contentType !== undefined) headers['content-type'] = contentType
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers, payload: '{"name":"Rex","categoryId":1}' })
      assert.equal(response.statusCode, 415, `${contentType}: ${response.body}`)
      assert.equal(errorOf(response).code, 'unsupported_media_type')
      assert.match(errorOf(response).message, contentType === undefined ? /^The body has no Content-Type; / : new RegExp(`^Content-Type ${contentType} is not accepted; `))
      assert.match(errorOf(response).message, /send the body as application\/json in UTF-8/)
    }
    const form = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: '{"name":"Rex","categoryId":3}' })
    assert.equal(errorOf(form).message, 'Content-Type application/x-www-form-urlencoded is not accepted; send the body as application/json in UTF-8 ' +
    "(curl -d sends a form unless given -H 'Content-Type: application/json')")
    const empty = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': '' }, payload: '{"name":"Rex","categoryId":3}' })
    assert.equal(errorOf(empty).message, 'The body\'s Content-Type is empty; send the body as application/json in UTF-8')
  })

  test('createPet answers 415 with Accept-Encoding: identity for a body in a content coding (gzip, or any other)', async (t) => {
    const testApp = await build(t, { store })
    for (const coding of ['gzip', 'bogus', 'identity, gzip']) {
      const response = await testApp.app.inject({
        method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json', 'content-encoding': coding }, payload: '{"name":"Rex","categoryId":1}'
      })
      assert.equal(response.statusCode, 415, `${coding}: ${response.body}`)
      assert.equal(errorOf(response).message, `Content-Encoding ${coding} is not accepted; send the body as it is, without a content coding`)
      assert.equal(response.headers['accept-encoding'], 'identity')
    }
    // An empty Content-Encoding lists no coding (RFC 9110, section 5.6.1): the body is as it is.
    for (const coding of ['Identity', '', ', ', ' , identity']) {
      const identity = await testApp.app.inject({
        method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json', 'content-encoding': coding }, payload: '{"name":"Rex","categoryId":1}'
      })
      assert.equal(identity.statusCode, 201, `${JSON.stringify(coding)}: ${identity.body}`)
    }
  })

  test('a member named twice counts once, the last, as JSON.parse reads it: with an integer past 2^53 too', async (t) => {
    const testApp = await build(t, { store })
    const bodies: Array<[string, Record<string, unknown>]> = [
      ['{"name":"Rex","categoryId":1,"name":"Tom"}', { name: 'Tom', categoryId: 1 }],
      ['{"name":"Rex","categoryId":12345678901234567,"name":"Tom"}', { name: 'Tom', categoryId: 12345678901234567n }],
      ['{"name":"Rex","categoryId":1,"n\\u0061me":"Tom","status":"sold","status":"pending"}', { name: 'Tom', categoryId: 1, status: 'pending' }]
    ]
    for (const [payload, expected] of bodies) {
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json' }, payload })
      assert.equal(response.statusCode, 201, `${payload}: ${response.body}`)
      const pet = parseLossless(response.body, null, (digits) => BigInt(digits) <= Number.MAX_SAFE_INTEGER ? Number(digits) : BigInt(digits)) as Record<string, unknown>
      assert.deepEqual({ name: pet.name, categoryId: pet.categoryId, ...(expected.status === undefined ? {} : { status: pet.status }) }, expected, payload)
    }
  })

  test('createPet accepts application/json with a UTF-8 charset, or US-ASCII, its subset', async (t) => {
    const testApp = await build(t, { store })
    for (const charset of ['UTF-8', 'utf8', '"utf-8"', 'US-ASCII']) {
      const response = await testApp.app.inject({
        method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': `application/json; charset=${charset}` }, payload: '{"name":"Rex","categoryId":1}'
      })
      assert.equal(response.statusCode, 201, charset)
    }
    // A parameter's quoted value may hold a `;`: what follows it there is that value, not a charset (it was read as one: 415).
    for (const contentType of ['application/json; profile="https://example.com/p;charset=latin1"', 'application/json; a="x\\"; charset=latin1"; charset=utf-8']) {
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': contentType }, payload: '{"name":"Rex","categoryId":1}' })
      assert.equal(response.statusCode, 201, contentType)
    }
    // A charset named twice is taken only if both name UTF-8: the first alone let a second latin1 through.
    for (const contentType of ['application/json; profile="p"; charset=latin1', 'application/json; charset=utf-8; charset=latin1', 'application/json; charset=latin1; charset=utf-8']) {
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': contentType }, payload: '{"name":"Rex","categoryId":1}' })
      assert.equal(response.statusCode, 415, contentType)
    }
    const twice = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json; charset=utf-8; charset=US-ASCII' }, payload: '{"name":"Rex","categoryId":1}' })
    assert.equal(twice.statusCode, 201)
  })

  test('createPet answers 413 for a body over 16 KiB', async (t) => {
    const testApp = await build(t, { store })
    const payload = JSON.stringify({ name: 'Rex', categoryId: 1, padding: 'x'.repeat(16 * 1024) })
    const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...testApp.auth, 'content-type': 'application/json' }, payload })
    assert.equal(response.statusCode, 413)
    assert.equal(errorOf(response).code, 'payload_too_large')
    assert.equal(errorOf(response).message, 'The body is larger than the limit of 16384 bytes (16 KiB)')
  })
})
