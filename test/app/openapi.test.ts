import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ERROR_CODES } from '../../src/errors.js'
import { build } from '../helper.js'

test('GET /v1/openapi.json serves the OpenAPI 3.1 document without a key', async (t) => {
  const testApp = await build(t, { env: { PUBLIC_BASE_URL: 'https://pets.example.com' } })
  const response = await testApp.app.inject({ url: '/v1/openapi.json' })
  assert.equal(response.statusCode, 200)
  const doc = response.json()
  assert.equal(doc.openapi, '3.1.0')
  assert.deepEqual(doc.servers, [{ url: 'https://pets.example.com/v1' }])
  assert.deepEqual(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', description: doc.components.securitySchemes.bearerAuth.description })
  assert.deepEqual(doc.security, [{ bearerAuth: [] }])

  assert.equal(doc.paths['/pets'].get.operationId, 'listPets')
  assert.equal(doc.paths['/pets'].post.operationId, 'createPet')
  const getPet = doc.paths['/pets/{petId}'].get
  assert.equal(getPet.operationId, 'getPet')
  assert.equal(getPet.deprecated, true)
  assert.equal(doc.paths['/pets'].get.deprecated, undefined)

  assert.deepEqual(Object.keys(doc.paths['/pets'].post.responses).sort(), ['201', '400', '401', '409', '413', '415', '422', '429', '503'])
  assert.deepEqual(Object.keys(doc.paths['/pets'].get.responses).sort(), ['200', '400', '401', '429', '503'])
  assert.equal(doc.paths['/pets'].post.parameters.find((p: { name: string }) => p.name === 'idempotency-key').in, 'header')
  assert.deepEqual(Object.keys(getPet.responses).sort(), ['200', '400', '401', '404', '429', '503'])
  assert.deepEqual(doc.components.schemas.Error.properties.code.enum, [...ERROR_CODES])
  const newPet = doc.paths['/pets'].post.requestBody.content['application/json'].schema
  assert.deepEqual(newPet.required, ['name', 'categoryId'])
  assert.equal(newPet.properties.categoryId.format, 'int64')
  assert.equal(newPet.additionalProperties, false)
})
