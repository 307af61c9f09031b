import type { IncomingMessage, ServerResponse } from 'node:http'
import fp from 'fastify-plugin'
import { announcesBody, expectsOnlyContinue } from './request-head.js'

/**
 * Answers `Expect: 100-continue` with `100 Continue` only when the body is about to be read, as RFC
 * 9110 (section 10.1.1) means it: Node sends it as soon as the head is parsed, so a client sent its
 * body even to a request refused without reading it (no key, no `Host`, a path not served, a rate
 * limit). Refused, the request gets its final answer alone, and Node then closes the connection,
 * since the body it announced was never asked for; the requests pipelined after one with a body wait
 * for its answer (see pipelined-requests), so none of them is served on a closing connection.
 *
 * The body is read once the stream is resumed, which a reader does when it starts (the body parser
 * listening for its data), and Node does after the answer to drop a body nobody read: only the first
 * resume before the answer's head asks for the body. (Not its `_read`: a body that came whole, while
 * the request waited behind another on its connection, is read without one, and without 100 Continue
 * Node closed the connection after the answer.) A request that announces no body (`Content-Length: 0`
 * or none) gets `100 Continue` at once, as from Node: without it, Node would close its connection
 * after the answer.
 */
export default fp(async (app) => {
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (!expectsOnlyContinue(request)) {
      app.server.emit('checkExpectation', request, response)
      return
    }
    if (!announcesBody(request)) {
      response.writeContinue()
    } else {
      const resume = request.resume
      request.resume = function () {
        request.resume = resume
        if (!response.headersSent) response.writeContinue()
        return resume.call(this)
      }
    }
    app.server.emit('request', request, response)
  })
}, { name: 'expect-continue', dependencies: ['error-handler'] })
