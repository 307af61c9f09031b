import { Type } from 'typebox'
import { ApiError, errorExample } from '../errors.js'
import type { CursorCodec, ListFilter } from './cursor.js'

export const DEFAULT_PAGE_LIMIT = 20
const MAX_PAGE_LIMIT = 100

/** The `limit` parameter of a list: optional with a default, so that clients see it as optional; validation fills it in. */
export function PageLimit (items: string) {
  return Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT, description: `Maximum number of ${items} to return` }))
}

/** The `cursor` parameter of a list. */
export const PageCursor = Type.Optional(Type.String({
  maxLength: 200,
  description: 'Opaque position from the `Link: rel="next"` header of the previous page'
}))

/** The keyset position a `cursor` parameter stands for (none without one); a 400 when it was not made for this list and filter. */
export function afterIdOfCursor<Status extends string> (codec: CursorCodec<Status>, cursor: string | undefined, filter: ListFilter<Status>): bigint | undefined {
  if (cursor === undefined) return undefined
  const afterId = codec.decode(cursor, filter)
  if (afterId === undefined) throw new ApiError(400, 'validation_failed', 'Query parameter `cursor` is malformed or was issued for another filter')
  return afterId
}

/** The OpenAPI 400 of a listing operation, with the answer to a limit out of range as its example. */
export const PAGE_LIMIT_INVALID = errorExample(400, `Query parameter \`limit\` must be an integer from 1 to ${MAX_PAGE_LIMIT}`)
