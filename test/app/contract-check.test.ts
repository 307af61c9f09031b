import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkContract } from '../contract.js'
import { build } from '../helper.js'

test('the check of answers against the document refuses an undeclared header, a header of the wrong form, a missing required one and a body its schema refuses', async (t) => {
  const { app, auth } = await build(t, { answersChecked: false })
  // Each request names what its answer gets wrong; the check, whose hooks come after, records the result.
  app.addHook('onSend', async (request, reply, payload) => {
    const mutation = request.headers['x-mutation']
    if (mutation === 'undeclared') reply.header('x-undeclared', '1')
    if (mutation === 'wrong-form') reply.header('idempotent-replayed', 'yes')
    if (mutation === 'missing') reply.removeHeader('location')
    return mutation === 'body' ? '[{"name":1}]' : payload
  })
  let check: () => Promise<void> = async () => {}
  checkContract(t, app, (checkAnswers) => { check = checkAnswers })
  const create = (mutation: string) => app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'x-mutation': mutation }, payload: { name: 'Rex', categoryId: 1 } })
  assert.equal((await app.inject({ url: '/v1/pets', headers: { ...auth, 'x-mutation': 'undeclared' } })).statusCode, 200)
  assert.equal((await app.inject({ url: '/v1/pets/1', headers: { ...auth, 'x-mutation': 'body' } })).statusCode, 404)
  assert.equal((await create('wrong-form')).statusCode, 201)
  assert.equal((await create('missing')).statusCode, 201)
  assert.equal((await create('none')).statusCode, 201)

  await assert.rejects(check(), (error: Error) => {
    const violations = error.message
    assert.match(violations, /GET \/v1\/pets 200 \(listPets\): headers must NOT have additional properties \{"additionalProperty":"x-undeclared"\}/)
    assert.match(violations, /POST \/v1\/pets 201 \(createPet\): headers\/idempotent-replayed must be equal to one of the allowed values/)
    assert.match(violations, /POST \/v1\/pets 201 \(createPet\): the required header Location is missing/)
    assert.match(violations, /GET \/v1\/pets\/1 404 \(getPet\): body must be object/)
    assert.equal(violations.match(/\(createPet\)/g)?.length, 2, 'the answer without a mutation keeps to the document')
    return true
  })
})
