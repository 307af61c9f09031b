import type { CursorCodec } from './cursor.js'

interface NextPage<Filter extends string> {
  /** The list's URL under /v1, such as `/pets`. */
  path: string
  limit: number
  status: Filter | undefined
  afterId: bigint
}

/** The RFC 8288 `Link: rel="next"` value for the page after `afterId`, keeping the limit and the filter. */
export function nextPageLink<Filter extends string> (
  apiUrl: (path: string) => string,
  codec: CursorCodec<Filter>,
  { path, limit, status, afterId }: NextPage<Filter>
): string {
  const query = new URLSearchParams({ limit: String(limit) })
  if (status !== undefined) query.set('status', status)
  query.set('cursor', codec.encode(afterId, status))
  return `<${apiUrl(`${path}?${query}`)}>; rel="next"`
}
