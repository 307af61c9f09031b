import { ApiError } from './errors.js'

/**
 * How many lines of the header `name` (lower case) `rawHeaders` holds. Of several lines of a header
 * that must come once (Host, Authorization, Content-Type) Node keeps the first, where a proxy in
 * front may go by the last, and so route, authenticate or read the body otherwise than here; several
 * Idempotency-Key lines it joins into one key (`k1, k2`). A loop rather than `headersDistinct`, which
 * would build an array for every header of every request.
 */
export function countHeaderLines (rawHeaders: string[], name: string): number {
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const line = rawHeaders[i]!
    if (line.length === name.length && line.toLowerCase() === name) count++
  }
  return count
}

/** The 400 of a header sent more than once that must be sent once. */
export function repeatedHeader (name: string, count: number): ApiError {
  return new ApiError(400, 'bad_request', `The request has ${count} ${name} headers; send one`)
}
