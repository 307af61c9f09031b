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
    const read = list.replace('Connection: close\r\n', '')
    // One write: the server parses all five at once. Both reads come after both creates.
    socket.write(create('First') + create('Second') + read + read + list)
    await once(socket, 'close')
    const answers = received().split(/(?=HTTP\/1\.1 \d{3} )/)
    assert.deepEqual(answers.map((answer) => answer.slice(0, 12)), ['HTTP/1.1 201', 'HTTP/1.1 201', 'HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200'])
    for (const answer of answers.slice(2)) {
      const page = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Array<{ name: string }>
      assert.deepEqual(page.map(({ name }) => name), ['First', 'Second'], 'a list pipelined after the creates missed them')
    }
  })
})
