import type { CursorCodec, ListFilter } from './cursor.js'

interface NextPage<Status extends string> {
  /** The list's URL under /v1, such as `/pets`. */
  path: string
  limit: number
  filter: ListFilter<Status>
  afterId: bigint
}

/** The RFC 8288 `Link: rel="next"` value for the page after `afterId`, keeping the limit and the filter. */
export function nextPageLink<Status extends string> (
  apiUrl: (path: string) => string,
  codec: CursorCodec<Status>,
  { path, limit, filter, afterId }: NextPage<Status>
): string {
  const query = new URLSearchParams({ limit: String(limit) })
  if (filter.status !== undefined) query.set('status', filter.status)
  if (filter.categoryId !== undefined) query.set('categoryId', String(filter.categoryId))
  query.set('cursor', codec.encode(afterId, filter))
  return `<${apiUrl(`${path}?${query}`)}>; rel="next"`
}
