import { once } from 'node:events'
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { defer } from '../helper.js'

export interface Received {
  headers: IncomingHttpHeaders
  body: string
}

export interface Receiver {
  /** http://127.0.0.1:PORT/hook (https://HOST:PORT/hook with a certificate). */
  url: string
  port: number
  received: Received[]
  /** The status of the next answers, in turn; 204 once they are used up. */
  answers: number[]
  /** When set, called with each request's number (from 1): a request it returns a promise for is answered once that settles. */
  hold?: ((request: number) => Promise<void> | undefined) | undefined
  /** Resolves once `count` requests have arrived, or fails after `timeoutMs`. */
  waitFor: (count: number, timeoutMs?: number) => Promise<Received[]>
  /** Stops it before the test ends: connections to its port are refused. */
  close: () => Promise<void>
}

/** A webhook receiver on 127.0.0.1 that keeps every request, closed when the test ends. */
export async function startReceiver (t: TestContext, { tls, hostname = '127.0.0.1' }: { tls?: { key: string, cert: string }, hostname?: string } = {}): Promise<Receiver> {
  const received: Received[] = []
  const answers: number[] = []
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => { body += chunk })
    request.on('end', () => {
      received.push({ headers: request.headers, body })
      const held = receiver.hold?.(received.length)
      const status = answers.shift() ?? 204
      void Promise.resolve(held).then(() => response.writeHead(status).end())
    })
  }
  const server = tls === undefined ? createHttpServer(handle) : createHttpsServer(tls, handle)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const close = async () => {
    if (!server.listening) return
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  defer(t, close)
  const { port } = server.address() as AddressInfo
  const receiver: Receiver = {
    url: `${tls === undefined ? 'http' : 'https'}://${hostname}:${port}/hook`,
    port,
    received,
    answers,
    close,
    waitFor: async (count, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`the receiver got ${received.length} requests, not ${count}, in ${timeoutMs} ms`)
        await sleep(20)
      }
      return received.slice(0, count)
    }
  }
  return receiver
}
