import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { announcesBody, BODILESS_METHODS } from './request-head.js'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The answer lasts as long as the client wants (the event stream): the requests pipelined after
     * it wait for its end, rather than be worked on with no answer ever to be sent (a stream each took
     * one of its key's few places).
     */
    endless?: boolean
  }
}

// Its answer never leaves: the connection closes after the answer before it.
const CONNECTION_CLOSING = new ApiError(400, 'bad_request', 'The connection is closing: the request before this one was answered with Connection: close')

// The answer to the last request on each connection that the requests after it wait for.
// Apart from the socket, whose shape a property of ours would change for Node's code that reads it.
const lastBarrier = new WeakMap<Socket, ServerResponse>()

/**
 * Of the requests pipelined behind an unfinished answer, every PIPELINE_DEPTH-th is one the requests
 * after it wait for, as for a request that changes something: the one being answered and at most so
 * many behind it are worked on together. Node hands over every request of what it reads at once
 * (64 KiB, a thousand small ones), and their answers waited in memory for a client that does not read
 * them: a file each held open (two connections asking for the docs page's script held 2,000
 * descriptors), or a copy of a large body.
 */
const PIPELINE_DEPTH = 8
// How many requests each connection has had pipelined behind an unfinished answer.
const pipelined = new WeakMap<Socket, number>()
/**
 * Past this many requests waiting on a connection, it is closed: each holds a few KB for as long as
 * the answer before it lasts, and Node parses all that comes while an event stream, which never
 * ends and writes little, is open (40,000 held 156 MB). Answers that do not fit the connection stop
 * its reading: that bounds the others.
 */
const MAX_WAITING = 1000
// How many requests wait on each connection.
const waitingOn = new WeakMap<Socket, number>()
const TOO_MANY_WAITING = new ApiError(400, 'bad_request', `More than ${MAX_WAITING} requests wait on this connection for answers before them: it is closed`)
// The requests waiting for each answer that others wait for (see afterAnswer).
const waiting = new WeakMap<ServerResponse, Array<() => void>>()
// What waits on each connection, released should it close, and the answers queued on it, ended then:
// Node emits nothing on the answers queued behind the one it was writing, which would wait forever.
const releasedOnClose = new WeakMap<Socket, Set<() => void>>()

/**
 * A request pipelined on a connection after one that changes something (any method but GET, HEAD and
 * OPTIONS) starts only once that one is answered, so that it sees what it did: Node hands the server
 * every pipelined request as soon as it is parsed, and a GET sent after a POST was answered from the
 * store as it was before the POST's commit. RFC 9112 (section 9.3.2) lets a server work on pipelined
 * requests together only when all are safe. So does one after a request with a body, which may be
 * answered before its body is read, with its connection closed: a request after an answer that
 * closes the connection is not served (section 9.6), where what Node parsed as one may have been the
 * rest of that body. A GET or HEAD request with a body (which has no meaning, RFC 9110) is answered
 * without reading it, and its connection closes after the answer: read and dropped, a body of any
 * size kept the connection (past the 16 KiB a body may have), and one that never ended drew a 408
 * after the answer, a second answer to one request. On the path of every request, so without a
 * listener or a closure unless a request has to wait: a lookup, and for an unsafe request, one with
 * a body or an endless answer a write (and for one queued behind an unfinished answer, a count: see
 * PIPELINE_DEPTH).
 */
export default fp(async (app) => {
  app.addHook('onRequest', (request, reply, done) => {
    const socket = request.raw.socket
    const before = lastBarrier.get(socket)
    const withBody = announcesBody(request.raw)
    // Node reads what follows a request asking to upgrade the connection as the new protocol's, and,
    // serving no other, drops it: a request pipelined after it would never be answered.
    if ((withBody && BODILESS_METHODS.has(request.method)) || request.raw.headers.upgrade !== undefined) reply.header('connection', 'close')
    // Queued behind an unfinished answer: it has no connection yet.
    const queued = reply.raw.socket === null
    if (queued) endedWithConnection(socket, reply.raw)
    if (!SAFE_METHODS.has(request.method) || withBody || (queued && deepInPipeline(socket)) || request.routeOptions.config.endless === true) {
      lastBarrier.set(socket, reply.raw)
    }
    if (before === undefined) {
      done()
    } else if ((before.writableFinished || before.destroyed) && !socket.writableNeedDrain) {
      // Written whole, or cut off with its connection: nothing to wait for, nor to keep.
      if (lastBarrier.get(socket) === before) lastBarrier.delete(socket)
      done(closingError(socket))
    } else {
      const waitingHere = (waitingOn.get(socket) ?? 0) + 1
      if (waitingHere > MAX_WAITING) {
        socket.destroy()
        done(TOO_MANY_WAITING) // answered to no one: counted and logged as the others are
        return
      }
      waitingOn.set(socket, waitingHere)
      afterAnswer(before, socket, () => {
        waitingOn.set(socket, waitingOn.get(socket)! - 1)
        done(closingError(socket))
      })
    }
  })
}, { name: 'pipelined-requests' })

/**
 * Makes the requests pipelined after `request` on its connection wait for its `response`, as for a
 * request that changes something: for an answer made outside Fastify (a 417 from Node's
 * `checkExpectation`), which closes the connection. (A response has its socket only once the answers
 * before it are written: the request has it from the start.)
 */
export function holdRequestsAfter (request: IncomingMessage, response: ServerResponse): void {
  lastBarrier.set(request.socket, response)
}

/** Counts a request pipelined behind an unfinished answer (which has no connection yet); true for every PIPELINE_DEPTH-th. */
function deepInPipeline (socket: Socket): boolean {
  const count = (pipelined.get(socket) ?? 0) + 1
  pipelined.set(socket, count)
  return count % PIPELINE_DEPTH === 0
}

/**
 * Runs `then` once `answer` is written, and then once its connection takes more (an answer is
 * finished once its connection holds it, read or not). One listener for all that wait on an answer:
 * Node warns past 10 on one emitter.
 */
function afterAnswer (answer: ServerResponse, socket: Socket, then: () => void): void {
  if (socket.destroyed) return then()
  const queue = waiting.get(answer)
  if (queue !== undefined) {
    queue.push(then)
    return
  }
  const waiters = [then]
  waiting.set(answer, waiters)
  const onClose = pendingOn(socket)
  let released = false
  const release = () => {
    if (released) return
    released = true
    waiting.delete(answer)
    onClose.delete(release)
    for (const go of waiters) go()
  }
  onClose.add(release)
  const whenWritable = () => {
    if (socket.writableNeedDrain) socket.once('drain', release)
    else release()
  }
  if (answer.writableFinished || answer.destroyed) whenWritable()
  else answer.once('close', whenWritable)
}

/**
 * Ends an answer queued behind an unfinished one should its connection close first: Node then emits
 * nothing on it, and what was being sent in it stayed open (a file: six descriptors held for good by
 * each connection cut with a pipeline of the docs page's script). 'close' is what it would emit
 * connected, and what Fastify ends a stream sent in it on.
 */
function endedWithConnection (socket: Socket, answer: ServerResponse): void {
  const onClose = pendingOn(socket)
  const end = () => {
    onClose.delete(end)
    if (answer.writableFinished) return
    answer.destroy()
    answer.emit('close')
  }
  onClose.add(end)
  answer.once('finish', () => { onClose.delete(end) })
}

/** What is to run on `socket`'s close (releases, ends): all of it, with one listener. */
function pendingOn (socket: Socket): Set<() => void> {
  let releases = releasedOnClose.get(socket)
  if (releases === undefined) {
    const onClose = releases = new Set()
    releasedOnClose.set(socket, onClose)
    socket.once('close', () => { for (const release of onClose) release() })
  }
  return releases
}

/** Node ends the connection when it has written an answer that closes it. */
function closingError (socket: Socket): ApiError | undefined {
  return socket.writableEnded || socket.destroyed ? CONNECTION_CLOSING : undefined
}
