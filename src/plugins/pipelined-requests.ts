import type { Socket } from 'node:net'
import fp from 'fastify-plugin'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The requests pipelined after an unsafe one, waiting for it to be answered. */
type Waiting = Array<() => void>

const LAST_UNSAFE = Symbol('petstore.lastUnsafeRequest')
type TrackedSocket = Socket & { [LAST_UNSAFE]?: Waiting }

/**
 * A request pipelined on a connection after one that changes something (any method but GET, HEAD and
 * OPTIONS) starts only once that one is answered, so that it sees what it did: Node hands the server
 * every pipelined request as soon as it is parsed, and a GET sent after a POST was answered from the
 * store as it was before the POST's commit. RFC 9112 (section 9.3.2) lets a server work on pipelined
 * requests together only when all are safe. Without pipelining, a request costs one property read,
 * and an unsafe one a property write and a listener.
 */
export default fp(async (app) => {
  app.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket as TrackedSocket
    const before = socket[LAST_UNSAFE]
    if (!SAFE_METHODS.has(request.method)) {
      const waiting: Waiting = []
      socket[LAST_UNSAFE] = waiting
      // Answered, or its connection closed before it could be: what waits for it may start.
      reply.raw.once('close', () => {
        if (socket[LAST_UNSAFE] === waiting) socket[LAST_UNSAFE] = undefined
        for (const start of waiting.splice(0)) start()
      })
    }
    if (before === undefined) done()
    else before.push(done)
  })
}, { name: 'pipelined-requests' })
