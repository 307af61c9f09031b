import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compileAllNow, compiledOnFirstUse } from '../../src/validation/compiled-on-first-use.js'

test('a schema is compiled at its first call, once, from a copy of it as given', () => {
  const compiled: unknown[] = []
  const schema = { type: 'string', maxLength: 3 }
  const validate = compiledOnFirstUse(schema, (copy) => {
    compiled.push(structuredClone(copy))
    const maxLength = (copy as { maxLength: number }).maxLength
    const check = (data: unknown) => {
      check.errors = typeof data === 'string' && data.length <= maxLength ? undefined : [{ message: `longer than ${maxLength}` }]
      return check.errors === undefined
    }
    check.errors = undefined as unknown
    return check
  })
  schema.maxLength = 1 // changed after it was given: the copy stands
  assert.deepEqual(compiled, [], 'nothing compiled before the first call')
  assert.equal(validate('abc'), true)
  assert.equal(validate.errors, undefined)
  assert.equal(validate('abcd'), false)
  assert.deepEqual(validate.errors, [{ message: 'longer than 3' }], 'the errors of the last call, as Fastify reads them')
  assert.equal(validate('ab'), true)
  assert.equal(validate.errors, undefined)
  assert.deepEqual(compiled, [{ type: 'string', maxLength: 3 }], 'compiled once')
})

test('compileAllNow compiles every schema given and not yet compiled, and throws the error of one that cannot be', () => {
  compileAllNow()
  const compiled: string[] = []
  const given = ['first', 'second'].map((name) => compiledOnFirstUse({ name }, () => {
    compiled.push(name)
    return (data: unknown) => data
  }))
  given[0]!(1)
  assert.equal(compileAllNow(), 1, 'the one not yet compiled')
  assert.deepEqual(compiled, ['first', 'second'])
  assert.equal(compileAllNow(), 0)
  compiledOnFirstUse({}, (): (data: unknown) => unknown => { throw new Error('strict mode: unknown keyword') })
  assert.throws(() => compileAllNow(), /unknown keyword/)
  // (The schema that failed stays to be compiled: the tests after this one do not call compileAllNow.)
})

test('a schema that cannot be compiled fails its calls, each trying again', () => {
  let tries = 0
  const serialize = compiledOnFirstUse({}, (): (data: unknown) => string => {
    tries++
    throw new Error('unknown keyword')
  })
  assert.throws(() => serialize({}), /unknown keyword/)
  assert.throws(() => serialize({}), /unknown keyword/)
  assert.equal(tries, 2)
})
