import { Type, type Static } from 'typebox'
import { responseHeaders, type HeaderName } from './openapi/response-headers.js'
import { withoutSecrets } from './without-secrets.js'

/**
 * Every value `Error.code` can take, with the HTTP status it comes with and when; the OpenAPI document
 * and the README's error table are written from it.
 */
export const ERROR_CATALOG = {
  bad_request: { status: 400, meaning: 'The request line or headers cannot be read (a malformed URL, say)' },
  validation_failed: { status: 400, meaning: 'A parameter or a body field is missing, unknown or out of range; the message names it' },
  invalid_json: { status: 400, meaning: 'The body is not well-formed JSON' },
  unauthorized: { status: 401, meaning: 'No API key, or one that is unknown, revoked or expired' },
  insufficient_scope: { status: 403, meaning: 'The API key does not hold the scope the operation needs; `WWW-Authenticate` names it' },
  not_found: { status: 404, meaning: 'No such resource or path' },
  method_not_allowed: { status: 405, meaning: 'The path exists but not with this method; `Allow` lists the methods' },
  events_expired: { status: 410, meaning: 'Beta events: the events after `after` are no longer kept; the message names the oldest kept' },
  gone: { status: 410, meaning: 'The operation was removed at its sunset; the message and `Link` name its replacement' },
  request_timeout: { status: 408, meaning: 'The request took too long to arrive: its head more than 5 s, or the whole of it more than 30 s' },
  expectation_failed: { status: 417, meaning: 'The `Expect` header asks for something other than `100-continue`' },
  category_exists: { status: 409, meaning: 'Beta categories: a category of this name exists (names are compared without regard to case)' },
  idempotency_key_in_use: { status: 409, meaning: 'A request with the same `Idempotency-Key` is still being processed' },
  webhook_limit_reached: { status: 409, meaning: 'Beta webhooks: there are 100 subscriptions, the most there may be' },
  pet_not_available: { status: 409, meaning: 'Experimental orders: the pet is not `available` (another order holds it, or it is sold)' },
  invalid_transition: { status: 409, meaning: 'Experimental orders: the order cannot move from its status to the one asked; nothing changed' },
  payload_too_large: { status: 413, meaning: 'The body is larger than 16 KiB' },
  uri_too_long: { status: 414, meaning: 'A path parameter (an id) is longer than 8,192 characters (past 16 KiB with the headers, a 431)' },
  unsupported_media_type: { status: 415, meaning: 'The body is not `application/json` in UTF-8, or comes in a content coding (gzip, say)' },
  idempotency_key_reused: { status: 422, meaning: 'The `Idempotency-Key` was used before with a different body, or for another create' },
  webhook_url_refused: { status: 422, meaning: 'Beta webhooks: the URL is not https, holds credentials, port 0 or a fragment, or names or resolves to an address that is not public' },
  pet_not_found: { status: 422, meaning: 'Experimental orders: no pet has the `petId` of the order' },
  rate_limited: { status: 429, meaning: 'Too many requests; retry after `Retry-After` seconds' },
  header_too_large: { status: 431, meaning: 'The request line and headers are over 16 KiB' },
  internal_error: { status: 500, meaning: 'A fault in the service; it is logged with the request id' },
  not_implemented: { status: 501, meaning: 'The request method is not one the server knows (methods are case-sensitive: `get` is not `GET`)' },
  service_unavailable: { status: 503, meaning: 'The store is unreachable or the service is overloaded; retry after `Retry-After` seconds' }
} as const satisfies Record<string, { status: number, meaning: string }>

export type ErrorCode = keyof typeof ERROR_CATALOG
export const ERROR_CODES = Object.keys(ERROR_CATALOG) as ErrorCode[]

/** The body of every error response: `status` always equals the HTTP status. */
export const ErrorBody = Type.Object({
  code: Type.Enum(ERROR_CODES, { description: 'Machine-readable error code' }),
  message: Type.String({ description: 'Human-readable description' }),
  status: Type.Integer({ description: 'The HTTP status code of the response' })
}, { title: 'Error', additionalProperties: false })

export type ErrorBody = Static<typeof ErrorBody>

interface ApiErrorOptions {
  cause?: unknown
  /** Response headers the error requires, such as `Allow` or `WWW-Authenticate`. */
  headers?: Record<string, string>
  /** A 503 the service gives by design (it is stopping), not an outage: logged at `info`. */
  planned?: boolean
}

/** An error that is answered as it is: its status, code and message reach the client. */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly headers: Record<string, string>
  readonly planned: boolean

  constructor (
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    options: ApiErrorOptions = {}
  ) {
    super(message, { cause: options.cause })
    this.headers = options.headers ?? {}
    this.planned = options.planned ?? false
  }

  /** The Error body. Its message may quote the request (a field's name, a header): never a key or secret it held. */
  toBody (): ErrorBody {
    return { code: this.code, message: withoutSecrets(this.message), status: this.status }
  }
}

/** An error response as the OpenAPI document shows it: when it happens, and an example body. */
export interface ErrorResponse {
  status: number
  description: string
  code: ErrorCode
  example: string
  /** The headers this answer carries besides those of every answer. */
  headers?: HeaderName[]
}

/** The usual meaning of each error status; a route passes an ErrorResponse where its own differs. */
const ERROR_RESPONSES: Record<number, Omit<ErrorResponse, 'status'>> = {
  400: { description: 'The request is malformed or holds invalid values', code: 'validation_failed', example: '`categoryId` must be an integer from 1 to 9223372036854775807' },
  401: { description: 'Missing or invalid API key', code: 'unauthorized', example: 'The API key is invalid or revoked', headers: ['WWW-Authenticate'] },
  403: { description: 'The API key lacks the scope this operation needs', code: 'insufficient_scope', example: 'This operation needs the scope pets:write, which the API key does not hold', headers: ['WWW-Authenticate'] },
  404: { description: 'Not found', code: 'not_found', example: 'No pet with id 42' },
  409: { description: ERROR_CATALOG.idempotency_key_in_use.meaning, code: 'idempotency_key_in_use', example: 'A request with this Idempotency-Key is still being processed; retry later', headers: ['Retry-After'] },
  410: { description: 'Removed at its sunset (getPet: from 5 December 2030, for any id)', code: 'gone', example: 'getPet was removed on 5 December 2030; use GET /v1/pets (listPets) with the status filter' },
  413: { description: ERROR_CATALOG.payload_too_large.meaning, code: 'payload_too_large', example: 'The body is larger than the limit of 16384 bytes (16 KiB)' },
  415: { description: ERROR_CATALOG.unsupported_media_type.meaning, code: 'unsupported_media_type', example: 'Content-Type text/plain is not accepted; send the body as application/json in UTF-8', headers: ['Accept-Encoding'] },
  422: { description: ERROR_CATALOG.idempotency_key_reused.meaning, code: 'idempotency_key_reused', example: 'This Idempotency-Key was used with a different request body' },
  429: { description: ERROR_CATALOG.rate_limited.meaning, code: 'rate_limited', example: 'Rate limit of 600 requests per minute exceeded; retry in 30 s', headers: ['Retry-After'] },
  500: { description: ERROR_CATALOG.internal_error.meaning, code: 'internal_error', example: 'Internal error (request id 9f1c2b7e-3d4a-4e5f-8a6b-0c1d2e3f4a5b)' },
  503: { description: ERROR_CATALOG.service_unavailable.meaning, code: 'service_unavailable', example: 'The store is unavailable; retry later', headers: ['Retry-After'] }
}

/** The usual response of an error status, with an example message of the route's own. */
export function errorExample (status: number, example: string): ErrorResponse {
  return { status, ...ERROR_RESPONSES[status]!, example }
}

/** OpenAPI response entries with the Error body and an example of it, for the given statuses. */
export function errorResponses (...responses: Array<number | ErrorResponse>) {
  return Object.fromEntries(responses.map((response) => {
    const { status, description, code, example, headers = [] } = typeof response === 'number' ?
        { status: response, ...ERROR_RESPONSES[response]! } :
      response
    return [status, { ...ErrorBody, description, examples: [{ code, message: example, status }], headers: responseHeaders(...headers) }]
  })) as Record<number, typeof ErrorBody>
}
