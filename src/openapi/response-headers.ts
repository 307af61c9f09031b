import { SECURITY_HEADERS } from '../plugins/security-headers.js'
import { UNREAD_STATUSES } from './unread-requests.js'

/**
 * The response headers the API sends, as reusable components of the OpenAPI document: routes declare
 * the ones particular to a response in its schema's `headers` (@fastify/swagger puts them on the
 * response; Fastify's serializer ignores them), and `declareHeaders` adds those every response of a
 * kind carries. Each becomes a `$ref` to its component. GENERAL_HEADERS are described once instead.
 */
export const HEADER_COMPONENTS = {
  Location: { description: 'The URL of the resource created', required: true, schema: { type: 'string', format: 'uri-reference' } },
  Link: {
    description: 'RFC 8288 links: `rel="next"`, the next page, while more follow; on a deprecated operation, `rel="successor-version"`, its replacement',
    schema: { type: 'string', examples: ['</v1/pets?limit=20&cursor=AQEAAAAAAAAAFJ>; rel="next"'] }
  },
  'Idempotent-Replayed': { description: 'Present on the stored answer to a retry with the same `Idempotency-Key`', schema: { type: 'string', enum: ['true'] } },
  Deprecation: { description: 'RFC 9745: when the operation was deprecated, as `@` and Unix seconds', schema: { type: 'string', examples: ['@1795305600'] } },
  Sunset: { description: 'RFC 8594: when the operation will be removed (HTTP date)', schema: { type: 'string', examples: ['Thu, 05 Dec 2030 00:00:00 GMT'] } },
  'WWW-Authenticate': { description: 'The scheme to authenticate with (RFC 6750)', schema: { type: 'string', examples: ['Bearer realm="petstore", error="invalid_token"'] } },
  Allow: { description: 'The methods this path serves', schema: { type: 'string', examples: ['GET, POST'] } },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0, examples: [1] } },
  'Accept-Encoding': { description: 'RFC 7694: on a 415 for a body in a content coding, the one coding taken, `identity` (none)', schema: { type: 'string', enum: ['identity'] } },
  RateLimit: {
    description: 'draft-ietf-httpapi-ratelimit-headers-11: requests left (`r`) and seconds until the window resets (`t`); absent while limiting is off',
    schema: { type: 'string', examples: ['"default";r=598;t=41'] }
  },
  'API-Key-Expiration': {
    description: 'When the API key expires (HTTP-date), sent while that is less than 7 days away, so that clients can warn their operators',
    schema: { type: 'string', examples: ['Mon, 01 Mar 2027 00:00:00 GMT'] }
  },
  'API-Stability': {
    description: 'On every answer of an operation marked `x-stability`, its marker: `experimental` (it may change or go at any time) or `beta` (it changes only with 30 days\' notice)',
    schema: { type: 'string', enum: ['experimental', 'beta'] }
  },
  'RateLimit-Policy': {
    description: 'draft-ietf-httpapi-ratelimit-headers-11: the quota (`q`) per window of `w` seconds; absent while limiting is off',
    schema: { type: 'string', examples: ['"default";q=600;w=60'] }
  }
} as const

/**
 * Headers that say nothing about the operation, so the document describes them once, in its `info`,
 * rather than on every response: the security headers of every answer, and `Cache-Control` on every
 * authenticated one (no shared cache may keep it).
 */
export const GENERAL_HEADERS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, 'cache-control': 'no-store' }

/** `API-Stability`, on every answer of an operation marked `x-stability` (see the compatibility policy). */
export const STABILITY_HEADER = 'api-stability'

export type HeaderName = keyof typeof HEADER_COMPONENTS

/** A response schema's `headers` declaring these (see HEADER_COMPONENTS). */
export function responseHeaders (...names: HeaderName[]): Record<string, unknown> {
  return Object.fromEntries(names.map((name) => [name, { ...HEADER_COMPONENTS[name].schema, description: HEADER_COMPONENTS[name].description }]))
}

// Every operation is under /v1: behind a key, and counted by the rate limit.
const KEYED: HeaderName[] = ['RateLimit', 'RateLimit-Policy', 'API-Key-Expiration']
const DEPRECATED: HeaderName[] = ['Deprecation', 'Sunset', 'Link']
// Answered before the key is read: the router's 414 (an id too long), and those of a request not read whole.
const UNKEYED_STATUSES = new Set(['414', ...UNREAD_STATUSES])
// Answered before any route's hooks run: those, and the router's 405 (no such method).
const BEFORE_ROUTE_STATUSES = new Set(['405', ...UNKEYED_STATUSES])

interface Operation { deprecated?: boolean, 'x-stability'?: string, responses?: Record<string, { headers?: Record<string, unknown> }> }

/**
 * Every response of every operation (all under /v1, so all behind a key and counted by the rate
 * limit) gets the headers it carries, each as a `$ref` to its component: its own, the rate limit's
 * and the key's expiry (but on the router's 414 and the answers to requests not read whole), on a
 * deprecated operation the deprecation's, and on a marked one `API-Stability` (those two but on the
 * answers given before any route's hooks run).
 */
export function declareHeaders (paths: Record<string, Record<string, Operation>>): void {
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const names = new Set([
          ...Object.keys(response.headers ?? {}) as HeaderName[],
          // Those answers come before the key is read, and are not counted.
          ...UNKEYED_STATUSES.has(status) ? [] : KEYED,
          ...operation.deprecated !== true || BEFORE_ROUTE_STATUSES.has(status) ? [] : DEPRECATED,
          ...operation['x-stability'] === undefined || BEFORE_ROUTE_STATUSES.has(status) ? [] : ['API-Stability' as const]
        ])
        response.headers = Object.fromEntries([...names].map((name) => {
          if (!(name in HEADER_COMPONENTS)) throw new Error(`the response header ${name} has no component; declare it with responseHeaders()`)
          return [name, { $ref: `#/components/headers/${name}` }]
        }))
      }
    }
  }
}
