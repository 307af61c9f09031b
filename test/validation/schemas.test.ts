import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv } from 'ajv'
import { ConfigSchema } from '../../src/config.js'
import { ErrorBody } from '../../src/errors.js'
import * as categorySchemas from '../../src/categories/category.schemas.js'
import { IdempotencyKeyHeaders } from '../../src/idempotency/idempotency-key-header.js'
import * as orderSchemas from '../../src/orders/order.schemas.js'
import * as petSchemas from '../../src/pets/pet.schemas.js'

// The service's Ajv instances do not check schemas against JSON Schema's meta-schema (it cost a fifth
// of the start-up): every schema they compile is checked here instead.
const metaSchemaCheck = new Ajv({ strict: false })

function isSchema (entry: [string, unknown]): entry is [string, object] {
  const value = entry[1]
  return typeof value === 'object' && value !== null && !Array.isArray(value) && ('type' in value || 'enum' in value || 'anyOf' in value)
}

const schemas: Array<[string, object]> = [
  ['ConfigSchema', ConfigSchema],
  ['ErrorBody', ErrorBody],
  ...Object.entries<unknown>({ ...petSchemas, ...categorySchemas, ...orderSchemas, IdempotencyKeyHeaders }).filter(isSchema)
]

test('every request, response and configuration schema is valid JSON Schema', () => {
  for (const name of ['NewPet', 'Pet', 'ListPetsQuery', 'PetIdParams', 'IdempotencyKeyHeaders', 'NewCategory', 'Category', 'ListCategoriesQuery', 'CategoryIdParams', 'NewOrder', 'ListOrdersQuery', 'OrderIdParams']) {
    assert.ok(schemas.some(([found]) => found === name), `${name} is checked`)
  }
  for (const [name, schema] of schemas) {
    assert.equal(metaSchemaCheck.validateSchema(schema), true, `${name}: ${metaSchemaCheck.errorsText(metaSchemaCheck.errors)}`)
  }
})

test('the check refuses a schema with a keyword of the wrong type', () => {
  assert.equal(metaSchemaCheck.validateSchema({ type: 'object', properties: { name: { type: 'string', minLength: '1' } } }), false)
})
