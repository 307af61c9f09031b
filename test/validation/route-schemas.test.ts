import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compileAllNow } from '../../src/validation/compiled-on-first-use.js'
import { build } from '../helper.js'

// The service compiles each schema on its first use (see compiledOnFirstUse): here every one the
// routes give, for requests and answers, is compiled at once, so that none can fail a first request.
test('every schema of every route compiles', async (t) => {
  const { app, auth } = await build(t)
  await app.ready() // routes give their schemas to the compilers as the app boots
  const compiled = compileAllNow()
  assert.ok(compiled > 60, `${compiled} schemas compiled`)
  assert.equal(compileAllNow(), 0)
  assert.equal((await app.inject({ url: '/v1/pets?limit=x', headers: auth })).statusCode, 400)
})
