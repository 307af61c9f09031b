import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { forEachStore } from '../helper.js'
import { createKey, startServer } from '../process.js'
import { startReceiver } from './receiver.js'

forEachStore((store) => {
  test('kill -9 loses no delivery: one awaiting its retry and one just committed are both delivered after the restart', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t), WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '1s' }
    const receiver = await startReceiver(t)
    receiver.answers.push(500)
    const headers = { authorization: `Bearer ${await createKey(env)}`, 'content-type': 'application/json' }
    let server = await startServer(t, env)
    const post = async (path: string, body: object) => {
      const response = await fetch(`${server.url}/v1${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
      assert.equal(response.status, 201)
      return await response.json() as { id: number }
    }
    await post('/webhooks', { url: receiver.url, events: ['pet.created'] })
    const rex = await post('/pets', { name: 'Rex', categoryId: 3 })
    await receiver.waitFor(1)
    // Once the failed attempt is committed (its retry is due in a second), the process is killed.
    for (let logged = 0; logged === 0; await sleep(20)) {
      logged = (await (await fetch(`${server.url}/v1/webhooks/1/deliveries`, { headers })).json() as unknown[]).length
    }
    const tom = await post('/pets', { name: 'Tom', categoryId: 3 })
    assert.equal(await server.stop('SIGKILL'), null)

    server = await startServer(t, env)
    const received = await receiver.waitFor(3, 15_000)
    const [failed, retried, next] = received.map(({ headers, body }) => ({ id: headers['webhook-id'], petId: JSON.parse(body).data.id }))
    assert.deepEqual([failed!.petId, retried!.petId, next!.petId], [rex.id, rex.id, tom.id])
    assert.equal(retried!.id, failed!.id, 'the retry after the restart has the webhook-id of the first attempt')
    await sleep(300)
    assert.equal(receiver.received.length, 3, 'nothing more')
  })
})
