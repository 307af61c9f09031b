import type { Server } from 'node:http'
import type { Socket } from 'node:net'

/**
 * Drops a connection `ms` after this side ended it unless the client has closed it by then: the
 * answers written to the connection itself (a 408, a 400 for bytes that are not HTTP, a 431, a 501;
 * see error-handler) end it and wait for the client's end (allowHalfOpen), so that what it still
 * sends does not reset the connection before it reads the answer. A client that never ended its side
 * kept its connection, and its place among CONNECTIONS_PER_ADDRESS (until the idle timeout, 60 s) or
 * the metrics listener's few (for good). (Node destroys a connection once an answer of its own with
 * `Connection: close` is written: those never wait.)
 */
export function boundLingeringClose (server: Server, ms: number): void {
  server.on('connection', (socket: Socket) => {
    socket.once('finish', () => {
      const timer = setTimeout(() => { socket.destroy() }, ms).unref()
      socket.once('close', () => { clearTimeout(timer) })
    })
  })
}
