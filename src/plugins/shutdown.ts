import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

const SHUTTING_DOWN = new ApiError(503, 'service_unavailable', 'The server is shutting down; retry', {
  headers: { 'retry-after': '1', connection: 'close' },
  planned: true
})

/** How often, while the server closes, the connections gone idle since are closed. */
const IDLE_SWEEP_MS = 100

/**
 * How long, while the server closes, a connection with no answer under way may stay open: for a
 * request whose head is on its way, or the rest of a body being dropped after its answer.
 */
const UNANSWERED_GRACE_MS = 1000

/** The answer under way on a connection: Node's own field, not documented, which http-terminator reads for the same end. */
function answerOn (socket: Socket): ServerResponse | null | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
}

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
  const connections = new Set<Socket>()
  app.server.on('connection', (socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
  })
  app.addHook('preClose', (done) => {
    closing = true
    // Node closes the connections idle when the server closes, once: one whose answer had started
    // then goes idle afterwards, and was kept until its keep-alive timeout (72 s), past the
    // shutdown's grace. And once the server closes, Node no longer times out a request's head: a
    // connection that has sent none, or part of one (browsers open some ahead of need), or whose
    // refused body was still coming, held every shutdown to its grace (10 s), and app.close() to
    // the idle timeout (60 s). Such a connection, with no answer under way for a second, is closed.
    const unansweredSince = new Map<Socket, number>()
    const sweep = setInterval(() => {
      app.server.closeIdleConnections()
      const now = performance.now()
      for (const socket of connections) {
        const since = unansweredSince.get(socket)
        if (answerOn(socket) != null) unansweredSince.delete(socket)
        else if (since === undefined) unansweredSince.set(socket, now)
        else if (now - since >= UNANSWERED_GRACE_MS) socket.destroy()
      }
    }, IDLE_SWEEP_MS).unref()
    app.server.once('close', () => { clearInterval(sweep) })
    for (const socket of connections) {
      const answer = answerOn(socket)
      if (answer != null && !answer.headersSent) answer.setHeader('connection', 'close')
    }
    done()
  })
  app.addHook('onRequest', (_request, _reply, done) => {
    done(closing ? SHUTTING_DOWN : undefined)
  })
}, { name: 'shutdown' })
