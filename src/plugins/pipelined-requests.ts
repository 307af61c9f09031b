import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

// The answer to the last unsafe request made on each connection: the requests after it wait for it.
// Apart from the socket, whose shape a property of ours would change for Node's code that reads it.
const lastUnsafe = new WeakMap<Socket, ServerResponse>()

/**
 * A request pipelined on a connection after one that changes something (any method but GET, HEAD and
 * OPTIONS) starts only once that one is answered, so that it sees what it did: Node hands the server
 * every pipelined request as soon as it is parsed, and a GET sent after a POST was answered from the
 * store as it was before the POST's commit. RFC 9112 (section 9.3.2) lets a server work on pipelined
 * requests together only when all are safe. On the path of every request, so without a listener or a
 * closure unless a request has to wait: a lookup, and for an unsafe request a write.
 */
export default fp(async (app) => {
  app.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket
    const before = lastUnsafe.get(socket)
    if (!SAFE_METHODS.has(request.method)) lastUnsafe.set(socket, reply.raw)
    if (before === undefined) {
      done()
    } else if (before.writableFinished || before.destroyed) {
      // Written whole, or cut off with its connection: nothing to wait for, nor to keep.
      if (lastUnsafe.get(socket) === before) lastUnsafe.delete(socket)
      done()
    } else {
      before.once('close', () => { done() })
    }
  })
}, { name: 'pipelined-requests' })
