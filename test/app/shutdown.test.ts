import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import { createLogger } from '../../src/logger.js'
import { build, errorOf, openRawConnection, untilReceived } from '../helper.js'

test('during shutdown, an answer in flight finishes with Connection: close, an idle connection is closed, and a request that comes after it on a kept-alive connection gets 503 in the Error shape, logged as no outage', async (t) => {
  const logLines: Array<{ level: number, msg: string, err?: unknown }> = []
  const logger = createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { logLines.push(JSON.parse(String(line))); done() } }))
  const testApp = await build(t, { logger })
  const authorization = `Authorization: ${testApp.auth.authorization}\r\n`
  // An idle connection, kept alive after its answer.
  const idle = await openRawConnection(testApp)
  idle.socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\n${authorization}\r\n`)
  while (!idle.received().endsWith('[]')) await once(idle.socket, 'data')
  // A create in flight: Node emits 'request' once its headers are in, after Fastify's own listener has
  // run its first hooks (the shutdown check among them); half of its body is still to come.
  const busy = await openRawConnection(testApp)
  const body = '{"name":"Rex","categoryId":1}'
  const inFlight = once(testApp.app.server, 'request')
  busy.socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
  await inFlight
  // A large answer, its head sent and its body held back by a client that stopped reading: a request
  // that comes after it, on its connection, comes after the close.
  const late = await openRawConnection(testApp)
  late.socket.write('GET /docs/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n')
  await once(late.socket, 'data')
  late.socket.pause()
  const idleReceived = idle.received().length
  const closed = testApp.app.close()
  await new Promise((resolve) => setImmediate(resolve))
  busy.socket.write(body.slice(5))
  late.socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\n${authorization}\r\n`)
  late.socket.resume()
  await Promise.all([idle.closed, busy.closed, late.closed])
  await closed

  assert.equal(idle.received().length, idleReceived, 'the idle connection is closed with nothing more sent')
  const created = busy.received()
  assert.match(created, /^HTTP\/1\.1 201 /)
  assert.match(created, /\r\nconnection: close\r\n/i)
  assert.match(created, /"name":"Rex"/)
  const [asset, refused] = late.received().split(/(?=HTTP\/1\.1 )/) as [string, string]
  assert.match(asset, /^HTTP\/1\.1 200 /)
  assert.doesNotMatch(asset, /\r\nconnection: close\r\n/i, 'its head was sent before the close')
  assert.match(refused, /^HTTP\/1\.1 503 /)
  assert.match(refused, /\r\nretry-after: 1\r\n/i)
  assert.match(refused, /\r\nconnection: close\r\n/i)
  const [, json] = refused.split('\r\n\r\n')
  const error = errorOf({ statusCode: 503, headers: { 'content-type': /content-type: ([^\r]+)/i.exec(refused)![1] }, json: () => JSON.parse(json!) })
  assert.equal(error.code, 'service_unavailable')
  // A planned stop, not an outage to alert on: at info, without the stack of an error made at start.
  const logged = logLines.find(({ msg }) => msg.startsWith('The server is shutting down'))
  assert.deepEqual(logged && { level: logged.level, err: logged.err }, { level: 30, err: undefined }, JSON.stringify(logLines))
})

test('during shutdown, a request already sent on a kept-alive connection but not yet read (the event loop busy) is answered 503 with Connection: close, not cut with its connection', async (t) => {
  const testApp = await build(t)
  const request = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\n\r\n`
  // Kept alive after its first answer, as a client or a proxy sending request after request keeps it.
  const client = await openRawConnection(testApp)
  client.socket.write(request)
  await untilReceived(client.received, (text) => text.endsWith('[]'))
  const answered = client.received().length
  // The next request is in the server's socket buffer, unread, when the close begins: to Node, whose
  // parser has not seen it, the connection is idle, as under load most kept-alive ones are.
  client.socket.write(request)
  const closed = testApp.app.close()
  await Promise.all([client.closed, closed])

  const next = client.received().slice(answered)
  assert.match(next, /^HTTP\/1\.1 503 /, 'answered, not cut')
  assert.match(next, /\r\nconnection: close\r\n/i)
  assert.match(next, /"code":"service_unavailable"/)
})

test('during shutdown, a connection that goes idle after the close began (its answer under way, or its refused body still coming) is closed then, not at its keep-alive timeout', async (t) => {
  const testApp = await build(t)
  const authorization = `Authorization: ${testApp.auth.authorization}\r\n`
  // A body refused before it is read (no key), read and dropped after the answer: half of it is still to come.
  const dropping = await openRawConnection(testApp)
  dropping.socket.write('POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{')
  while (!dropping.received().includes('}')) await once(dropping.socket, 'data')
  // A large answer, its head sent and its body held back by a client that stopped reading.
  const late = await openRawConnection(testApp)
  late.socket.write(`GET /docs/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n${authorization}\r\n`)
  await once(late.socket, 'data')
  late.socket.pause()
  const started = Date.now()
  const closed = testApp.app.close()
  await new Promise((resolve) => setImmediate(resolve))
  dropping.socket.write('        }')
  late.socket.resume()
  await Promise.all([dropping.closed, late.closed, closed])
  assert.ok(Date.now() - started < 2000, `closed in ${Date.now() - started} ms`)
  assert.match(dropping.received(), /^HTTP\/1\.1 401 /)
  assert.equal(dropping.received().match(/HTTP\/1\.1 \d{3}/g)?.length, 1, 'one answer')
})

test('during shutdown, connections with no answer under way are closed once the server is quiet (one sent nothing, one part of a head), or after a second if one keeps sending (a refused body), not held to the grace or the idle timeout', { timeout: 10_000 }, async (t) => {
  const testApp = await build(t, { limits: { idleTimeoutMs: 10_000 } })
  let accepted = 0
  testApp.app.server.on('connection', () => { accepted++ })
  // As browsers open some ahead of need.
  const silent = await openRawConnection(testApp)
  const partHead = await openRawConnection(testApp)
  partHead.socket.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n')
  while (accepted < 2) await new Promise((resolve) => setTimeout(resolve, 5))
  const started = Date.now()
  await Promise.all([silent.closed, partHead.closed, testApp.app.close()])
  // Under the second a connection that keeps sending is given, with room for a loaded machine.
  assert.ok(Date.now() - started < 900, `closed in ${Date.now() - started} ms`)
  assert.equal(silent.received(), '', 'closed with nothing sent')
  assert.equal(partHead.received(), '', 'closed with nothing sent')

  const sendingApp = await build(t, { limits: { idleTimeoutMs: 10_000 } })
  // Refused (no key) before its body is read, the body then read and dropped: most of it still to come.
  const dropping = await openRawConnection(sendingApp)
  dropping.socket.write('POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{')
  await untilReceived(dropping.received, (text) => text.includes('}'))
  const dripping = setInterval(() => { dropping.socket.write(' ') }, 10)
  t.after(() => { clearInterval(dripping) })
  const closing = Date.now()
  await Promise.all([dropping.closed, sendingApp.app.close()])
  const sending = Date.now() - closing
  assert.ok(sending >= 900 && sending < 3000, `the one still sending closed in ${sending} ms`)
  assert.match(dropping.received(), /^HTTP\/1\.1 401 /)
  assert.equal(dropping.received().match(/HTTP\/1\.1 \d{3}/g)?.length, 1, 'one answer')
})
