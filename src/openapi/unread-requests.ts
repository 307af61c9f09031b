import { maxHeaderSize, type Server } from 'node:http'
import { ERROR_CATALOG, type ErrorCode } from '../errors.js'

type Json = Record<string, unknown>
interface Operation { responses?: Record<string, Json> }
type Paths = Record<string, Record<string, Operation>>

/** The 408's message, with the limits of `server` that the request passed. */
export function requestTimeoutMessage ({ headersTimeout, requestTimeout }: Pick<Server, 'headersTimeout' | 'requestTimeout'>): string {
  return `The request did not arrive in time: its head must arrive within ${headersTimeout / 1000} s, and the whole of it within ${requestTimeout / 1000} s`
}

/** The 431's message. */
export const HEAD_TOO_LARGE_MESSAGE = `The request's head is larger than the limit of ${maxHeaderSize} bytes (${maxHeaderSize / 1024} KiB)`

/** The 501's message. */
export const NOT_IMPLEMENTED_MESSAGE = 'The method is not one this server implements (methods are case-sensitive: GET, not get)'

/**
 * The answers a request may get before it is read whole, whatever its operation: a head or body that
 * comes too slowly (408), an `Expect` other than `100-continue` (417), a head over 16 KiB (431), a
 * method Node's parser does not know (`FOO`, or `get`: 501, as the path is never read).
 */
const UNREAD: Array<{ code: ErrorCode, status: number }> = [
  { code: 'request_timeout', status: 408 },
  { code: 'expectation_failed', status: 417 },
  { code: 'header_too_large', status: 431 },
  { code: 'not_implemented', status: 501 }
]

/** Their messages, as `server` sends them. */
function unreadMessages (server: Pick<Server, 'headersTimeout' | 'requestTimeout'>): Record<number, string> {
  return { 408: requestTimeoutMessage(server), 417: 'Expect: 100-later cannot be met; only 100-continue can', 431: HEAD_TOO_LARGE_MESSAGE, 501: NOT_IMPLEMENTED_MESSAGE }
}

/**
 * Their statuses, whose answers carry none of the key's, the rate limit's or the operation's headers.
 * (Not read from ERROR_CATALOG: errors.js, which response-headers.js serves, is not evaluated yet.)
 */
export const UNREAD_STATUSES = new Set(UNREAD.map(({ status }) => String(status)))

/**
 * Declares those answers on every operation: Node and the error handler give them on the connection,
 * before any route sees the request, so no route declares them, and a client or a validator reading
 * the document found them undeclared. Mutates `paths`.
 */
export function declareUnreadRequests (paths: Paths, server: Pick<Server, 'headersTimeout' | 'requestTimeout'>): void {
  const messages = unreadMessages(server)
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      operation.responses ??= {}
      for (const { code, status } of UNREAD) {
        const message = messages[status]
        operation.responses[status] = {
          description: ERROR_CATALOG[code].meaning,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { code, message, status } } }
        }
      }
    }
  }
}
