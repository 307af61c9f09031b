import { Type } from 'typebox'

export const DEFAULT_PAGE_LIMIT = 20

/** The `limit` parameter of a list: optional with a default, so that clients see it as optional; validation fills it in. */
export function PageLimit (items: string) {
  return Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_PAGE_LIMIT, description: `Maximum number of ${items} to return` }))
}

/** The `cursor` parameter of a list. */
export const PageCursor = Type.Optional(Type.String({
  maxLength: 200,
  description: 'Opaque position from the `Link: rel="next"` header of the previous page'
}))
