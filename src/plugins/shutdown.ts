import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

const SHUTTING_DOWN = new ApiError(503, 'service_unavailable', 'The server is shutting down; retry', {
  headers: { 'retry-after': '1', connection: 'close' }
})

/** How often, while the server closes, the connections gone idle since are closed. */
const IDLE_SWEEP_MS = 100

/** How long, while the server closes, a connection that has sent nothing yet may stay open for its first request. */
const SILENT_GRACE_MS = 1000

/**
 * Once the server is closing, the answers in flight finish with `Connection: close`, so that their
 * clients send their next requests on new connections (to another instance), not on one about to
 * close. (Node closes the idle connections itself, and those gone idle since are closed as they
 * go.) A request that still arrives on a kept-alive connection, behind an answer whose head had gone
 * before the close, is answered 503 in the Error shape, with Retry-After and Connection: close.
 * (Fastify's own answer for this case has another body, so it is turned off in buildApp.)
 */
export default fp(async (app) => {
  let closing = false
  /** The open connections, and when each was opened (performance.now()). */
  const connections = new Map<Socket, number>()
  app.server.on('connection', (socket) => {
    connections.set(socket, performance.now())
    socket.once('close', () => connections.delete(socket))
  })
  // A connection that has sent nothing yet (browsers open some ahead of need) is not idle to Node,
  // and once the server closes, Node no longer closes it at the headers timeout: it held every
  // shutdown to its grace (10 s), and app.close() to the idle timeout.
  const closeSilentConnections = () => {
    const openedBefore = performance.now() - SILENT_GRACE_MS
    for (const [socket, openedAt] of connections) if (socket.bytesRead === 0 && openedAt <= openedBefore) socket.destroy()
  }
  app.addHook('preClose', (done) => {
    closing = true
    // Node closes the connections idle when the server closes, once: one whose answer had started
    // then (or whose body was still being dropped) goes idle afterwards, and was kept until its
    // keep-alive timeout (72 s), past the shutdown's grace.
    const sweep = setInterval(() => {
      app.server.closeIdleConnections()
      closeSilentConnections()
    }, IDLE_SWEEP_MS).unref()
    app.server.once('close', () => { clearInterval(sweep) })
    for (const socket of connections.keys()) {
      // The answer under way on the connection: Node's own field, not documented, which
      // http-terminator reads for the same end.
      const answer = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
      if (answer != null && !answer.headersSent) answer.setHeader('connection', 'close')
    }
    done()
  })
  app.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? SHUTTING_DOWN : undefined)
  })
}, { name: 'shutdown' })
