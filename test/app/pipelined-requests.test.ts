import assert from 'node:assert/strict'
import { once } from 'node:events'
import { test } from 'node:test'
import { build, forEachStore, openRawConnection } from '../helper.js'

forEachStore((store) => {
  test('requests pipelined after creates on one connection see what the creates did (RFC 9112 section 9.3.2)', async (t) => {
    const testApp = await build(t, { store })
    const { socket, received } = await openRawConnection(testApp)
    const categoryId = 77
    const create = (name: string) => {
      const body = JSON.stringify({ name, categoryId })
      return `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    }
    const list = `GET /v1/pets?categoryId=${categoryId} HTTP/1.1\r\nHost: x\r\nAuthorization: ${testApp.auth.authorization}\r\nConnection: close\r\n\r\n`
    socket.write(create('First') + create('Second') + list) // one write: the server parses all three at once
    await once(socket, 'close')
    const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
    assert.deepEqual(answers.map((answer) => answer.slice(0, 12)), ['HTTP/1.1 201', 'HTTP/1.1 201', 'HTTP/1.1 200'])
    const page = JSON.parse(answers[2]!.slice(answers[2]!.indexOf('\r\n\r\n') + 4)) as Array<{ name: string }>
    assert.deepEqual(page.map(({ name }) => name), ['First', 'Second'], 'the list pipelined after the creates missed them')
  })
})
