import assert from 'node:assert/strict'
import { once } from 'node:events'
import { test } from 'node:test'
import { build, errorOf, openRawConnection } from '../helper.js'

test('during shutdown, a request in flight finishes and one pipelined behind it gets 503 in the Error shape, with Retry-After and Connection: close', async (t) => {
  const testApp = await build(t)
  const { socket, received: receivedSoFar } = await openRawConnection(testApp)
  const body = '{"name":"Rex","categoryId":1}'
  // Node emits 'request' once the headers are in, after Fastify's own listener has run the request's
  // first hooks (the shutdown check among them): the create is then in flight, its body half read.
  // A fixed wait of 50 ms let a loaded machine close the app before it read the headers (CI, 29 November).
  const inFlight = once(testApp.app.server, 'request')
  socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
  await inFlight

  const closed = testApp.app.close()
  await new Promise((resolve) => setImmediate(resolve))
  socket.write(`${body.slice(5)}GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`)
  await once(socket, 'close')
  await closed

  const [created, refused] = receivedSoFar().split(/(?=HTTP\/1\.1 )/)
  assert.match(created!, /^HTTP\/1\.1 201 /)
  assert.match(created!, /"name":"Rex"/)
  assert.match(refused!, /^HTTP\/1\.1 503 /)
  assert.match(refused!, /\r\nretry-after: 1\r\n/i)
  assert.match(refused!, /\r\nconnection: close\r\n/i)
  const [, json] = refused!.split('\r\n\r\n')
  const error = errorOf({ statusCode: 503, headers: { 'content-type': /content-type: ([^\r]+)/i.exec(refused!)![1] }, json: () => JSON.parse(json!) })
  assert.equal(error.code, 'service_unavailable')
})
