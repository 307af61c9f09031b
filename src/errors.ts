import { Type, type Static } from 'typebox'

/** Every value `Error.code` can take; documented in the README and the OpenAPI document. */
export const ERROR_CODES = [
  'bad_request',
  'validation_failed',
  'invalid_json',
  'unauthorized',
  'not_found',
  'method_not_allowed',
  'request_timeout',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'header_too_large',
  'idempotency_key_in_use',
  'idempotency_key_reused',
  'rate_limited',
  'internal_error',
  'service_unavailable'
] as const

export type ErrorCode = typeof ERROR_CODES[number]

/** The body of every error response: `status` always equals the HTTP status. */
export const ErrorBody = Type.Object({
  code: Type.Enum(ERROR_CODES, { description: 'Machine-readable error code' }),
  message: Type.String({ description: 'Human-readable description' }),
  status: Type.Integer({ description: 'The HTTP status code of the response' })
}, { additionalProperties: false })

export type ErrorBody = Static<typeof ErrorBody>

interface ApiErrorOptions {
  cause?: unknown
  /** Response headers the error requires, such as `Allow` or `WWW-Authenticate`. */
  headers?: Record<string, string>
}

/** An error that is answered as it is: its status, code and message reach the client. */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly headers: Record<string, string>

  constructor (
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    options: ApiErrorOptions = {}
  ) {
    super(message, { cause: options.cause })
    this.headers = options.headers ?? {}
  }

  toBody (): ErrorBody {
    return { code: this.code, message: this.message, status: this.status }
  }
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is malformed or holds invalid values',
  401: 'Missing or invalid API key',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'A request with the same Idempotency-Key is still being processed',
  413: 'Request body larger than 16 KiB',
  415: 'Request body is not application/json',
  422: 'The Idempotency-Key was used with a different request body',
  429: 'Rate limit exceeded; retry after Retry-After seconds',
  503: 'The store is unavailable; retry later'
}

/** OpenAPI response entries with the Error body, for the given statuses. */
export function errorResponses (...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [
    status,
    { ...ErrorBody, description: ERROR_DESCRIPTIONS[status] ?? 'Error' }
  ])) as Record<number, typeof ErrorBody>
}
