import { STATUS_CODES } from 'node:http'
import { ERROR_CATALOG, type ErrorCode } from '../errors.js'

type Json = Record<string, unknown>
interface Operation { responses?: Record<string, Json> }
type Paths = Record<string, Record<string, Operation>>

/**
 * The answers a request may get before it is read whole, whatever its operation: a head or body that
 * comes too slowly (408), an `Expect` other than `100-continue` (417), a head over 16 KiB (431), with
 * their messages as sent.
 */
const UNREAD: Array<{ code: ErrorCode, status: number, message: string }> = [
  { code: 'request_timeout', status: 408, message: STATUS_CODES[408]! },
  { code: 'expectation_failed', status: 417, message: 'Expect: 100-later cannot be met; only 100-continue can' },
  { code: 'header_too_large', status: 431, message: STATUS_CODES[431]! }
]

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
export function declareUnreadRequests (paths: Paths): void {
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      operation.responses ??= {}
      for (const { code, status, message } of UNREAD) {
        operation.responses[status] = {
          description: ERROR_CATALOG[code].meaning,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { code, message, status } } }
        }
      }
    }
  }
}
