import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

const SHUTTING_DOWN = new ApiError(503, 'service_unavailable', 'The server is shutting down; retry', {
  headers: { 'retry-after': '1', connection: 'close' },
  planned: true
})

/**
 * How often, while the server closes, its connections are looked at. Once a look finds that none has
 * received anything since the last one, nor has an answer under way, the server is quiet: its
 * clients have stopped sending, and the connections left are closed. Until then a client's pool takes
 * up its idle connections as its busy ones close (each answer now says `Connection: close`): idle
 * ones closed for being quiet 50 ms themselves, 4 to 22 of 60 were taken up just as they were, each
 * request then cut (undici, 30 requests at a time, on SIGTERM). Longer than a delayed ACK (40 ms),
 * which holds back a client's next small write.
 */
const SWEEP_MS = 100

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
 * close. A request that still arrives on a kept-alive connection, behind an answer whose head had
 * gone before the close, or in the instant before it, is answered 503 in the Error shape, with
 * Retry-After and Connection: close. (Fastify's own answer for this case has another body, so it is
 * turned off in buildApp.)
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
    // Node closes, as the server closes, every connection whose parser is between requests. Under
    // load that is most kept-alive ones, their next request already sent but not yet read, as the
    // event loop reads its sockets in turn: each was cut, its client seeing the connection reset (29
    // of 30 busy connections, in a probe). Here they are closed once the server is quiet.
    app.server.closeIdleConnections = () => {}
    // Once the server closes, Node no longer times out a request's head either: a connection that
    // keeps sending part of one, or a refused body, with no answer under way for a second, is closed.
    const seen = new Map<Socket, { bytesRead: number, unansweredSince: number }>()
    const sweep = () => {
      const now = performance.now()
      let quiet = true
      for (const socket of connections) {
        const answering = answerOn(socket) != null
        const last = seen.get(socket)
        if (answering || last?.bytesRead !== socket.bytesRead) quiet = false
        if (answering) seen.delete(socket)
        else if (last === undefined) seen.set(socket, { bytesRead: socket.bytesRead, unansweredSince: now })
        else if (now - last.unansweredSince >= UNANSWERED_GRACE_MS) socket.destroy()
        else last.bytesRead = socket.bytesRead
      }
      if (quiet) for (const socket of connections) socket.destroy()
    }
    sweep()
    // Swept in the check phase, just after the loop has read its sockets, not in the timers phase
    // before the read, while the clients, given the last turn's answers, send their next requests.
    const sweeping = setInterval(() => { setImmediate(sweep) }, SWEEP_MS).unref()
    app.server.once('close', () => { clearInterval(sweeping) })
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
