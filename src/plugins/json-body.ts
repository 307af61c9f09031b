import { isUtf8 } from 'node:buffer'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { parse as parseLossless } from 'lossless-json'
import secureJson from 'secure-json-parse'
import { ApiError } from '../errors.js'
import { countHeaderLines, repeatedHeader } from '../header-lines.js'
import { cut, printable } from '../printable.js'
import { parseExactNumber } from '../validation/exact-number.js'
import { JsonSyntaxError, readJsonTokens } from '../validation/json-tokens.js'
import { withoutSecrets } from '../without-secrets.js'

// What a 415 quotes of the header at fault, at most (UTF-16 units).
const MAX_ECHOED_HEADER = 100

const POISONING = { protoAction: 'error', constructorAction: 'error' } as const
// A member named twice counts once, the last, as JSON.parse reads it (lossless-json would refuse the text).
const EXACT = { parseNumber: parseExactNumber, onDuplicateKey: ({ newValue }: { newValue: unknown }) => newValue }
// A run of 16 or more digits may be an integer past 2^53, which JSON.parse would round; a digit
// before a point or an exponent may be a number whose exact value JSON.parse would round.
const MAYBE_INEXACT_NUMBER = /\d{16}|\d[.eE]/
// secure-json-parse's message for a "__proto__" key, and for a "constructor" holding "prototype".
const FORBIDDEN_KEY = 'Object contains forbidden prototype property'
// A media type's parameter (RFC 9110, section 5.6.6): a name, then a token or a quoted string, which
// may hold a `;` or an escaped `"`, and is passed over whole.
const PARAMETER = /;\s*([!#$%&'*+.^`|~\w-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;\s"]*)/g
// US-ASCII text is UTF-8 as it stands (RFC 8259 defines no charset for JSON; these are the ones that mean its encoding).
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii'])

/** The 400 for an operation's body that is empty, or not there at all. */
export function emptyBody (cause?: unknown): ApiError {
  return new ApiError(400, 'invalid_json', 'Request body is empty; a JSON object is expected', { cause })
}

/**
 * Parses a JSON body exactly: numbers are what their decimal text says (integers past 2^53 become
 * BigInt; see parseExactNumber); prototype poisoning is refused.
 */
export function parseJsonBody (text: string): unknown {
  if (text.length === 0) throw emptyBody()
  let value: unknown
  try {
    value = secureJson.parse(text, undefined, POISONING)
    // The common case costs one native parse; only bodies that may hold big integers are parsed again.
    if (MAYBE_INEXACT_NUMBER.test(text)) value = parseLossless(text, null, EXACT)
  } catch (error) {
    throw notParsed(text, error)
  }
  return value
}

/** Why `text` could not be parsed: a refused key, or the place of its syntax error. */
function notParsed (text: string, error: unknown): ApiError {
  // lossless-json reads by recursion, which a body of a few thousand nested arrays takes past the stack.
  if (error instanceof RangeError) {
    return new ApiError(400, 'validation_failed', 'The body nests arrays or objects too deeply to be read with its numbers exact', { cause: error })
  }
  if (error instanceof Error && error.message === FORBIDDEN_KEY) {
    return new ApiError(400, 'validation_failed', 'The keys `__proto__` and `constructor.prototype` are refused wherever they appear: they could change the prototype of objects built from this JSON', { cause: error })
  }
  try {
    // JSON.parse names no line and column, and no offset for some faults: the streaming parser does.
    readJsonTokens(Buffer.from(text), () => {})
  } catch (syntaxError) {
    if (syntaxError instanceof JsonSyntaxError) return new ApiError(400, 'invalid_json', `Request body is not valid JSON: ${syntaxError.message}`, { cause: error })
  }
  return new ApiError(400, 'invalid_json', 'Request body is not valid JSON', { cause: error })
}

/**
 * Whether a Content-Type names a charset other than UTF-8's names: each `charset` parameter counts, as
 * a media type with two is ambiguous (WHATWG's parsing takes the first, others the last).
 */
function namesOtherCharset (contentType: string): boolean {
  if (!contentType.includes(';')) return false // the common case: no parameters to look through
  for (const [, name, value] of contentType.matchAll(PARAMETER)) {
    if (name!.toLowerCase() === 'charset' && !UTF8_CHARSETS.has(value!.replace(/^"(.*)"$/, '$1').toLowerCase())) return true
  }
  return false
}

// What curl -d sends unless told otherwise: the commonest first mistake.
const FORM = 'application/x-www-form-urlencoded'

/** The 415 for a body sent as `contentType` (undefined: none given), naming what was received and what to send. */
export function unsupportedMediaType (contentType: string | undefined): ApiError {
  const received = describeContentType(contentType)
  const hint = contentType?.toLowerCase().startsWith(FORM) === true ? " (curl -d sends a form unless given -H 'Content-Type: application/json')" : ''
  return new ApiError(415, 'unsupported_media_type', `${received}; send the body as application/json in UTF-8${hint}`)
}

function describeContentType (contentType: string | undefined): string {
  if (contentType === undefined) return 'The body has no Content-Type'
  if (contentType === '') return 'The body\'s Content-Type is empty'
  // Cut (after any key in it is redacted, or part of one would be left): a header may be 16 KiB, none of which needs sending back.
  return `Content-Type ${printable(cut(withoutSecrets(contentType), MAX_ECHOED_HEADER))} is not accepted`
}

/**
 * The 415 for a body in a content coding (gzip, say), which is not decoded: read as it is, a gzipped
 * body was a 400 "not valid UTF-8", and an unknown coding's passed. `Accept-Encoding` says what is
 * taken (RFC 7694).
 */
function unsupportedContentCoding (coding: string): ApiError {
  return new ApiError(415, 'unsupported_media_type', `Content-Encoding ${printable(cut(withoutSecrets(coding), MAX_ECHOED_HEADER))} is not accepted; send the body as it is, without a content coding`, {
    headers: { 'accept-encoding': 'identity' }
  })
}

/** A list of `identity` and empty elements (RFC 9110, section 5.6.1), or none: the body is in no content coding. */
function isNoContentCoding (codings: string): boolean {
  return codings.split(',').every((coding) => ['', 'identity'].includes(coding.trim().toLowerCase()))
}

// Ignored, a field sent to such an operation (a `secret` to rotate-secret, say) would seem to be taken.
const BODY_NOT_TAKEN = new ApiError(400, 'validation_failed', 'This operation takes no body: send none, or an empty object `{}`')

/** Whether the request's operation takes a body (it declares one), which DELETE and rotate-secret do not. */
function takesBody (request: FastifyRequest): boolean {
  return request.routeOptions.schema?.body !== undefined
}

function isEmptyObject (value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0
}

/**
 * Only `application/json` bodies are read (any other type is a 415), in UTF-8, which RFC 8259
 * requires of JSON on the wire.
 */
export default fp(async (app) => {
  app.removeAllContentTypeParsers()
  // Another type, or none: a 415 at once, except for an operation that takes no body (DELETE,
  // rotate-secret) sent an empty one, which `curl -X POST -d ''` sends as a form.
  app.addContentTypeParser('*', (request, payload, done) => {
    if (takesBody(request)) {
      done(unsupportedMediaType(request.headers['content-type']), undefined)
      return
    }
    // Answered at its first byte, not read to its end: the body limit does not count what this reads.
    let answered = false
    const answer = (error: Error | null) => {
      if (answered) return
      answered = true
      payload.removeAllListeners('data')
      done(error, undefined)
    }
    payload.on('data', (chunk: Buffer) => { if (chunk.length > 0) answer(unsupportedMediaType(request.headers['content-type'])) })
    payload.on('error', answer)
    payload.on('end', () => { answer(null) })
  })
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const coding = request.headers['content-encoding']
    if (coding !== undefined && !isNoContentCoding(coding)) {
      done(unsupportedContentCoding(coding), undefined)
      return
    }
    const contentTypes = countHeaderLines(request.raw.rawHeaders, 'content-type')
    if (contentTypes > 1) {
      done(repeatedHeader('Content-Type', contentTypes), undefined)
      return
    }
    const idempotencyKeys = request.headers['idempotency-key'] === undefined ? 0 : countHeaderLines(request.raw.rawHeaders, 'idempotency-key')
    if (idempotencyKeys > 1) {
      done(repeatedHeader('Idempotency-Key', idempotencyKeys), undefined)
      return
    }
    if (namesOtherCharset(request.headers['content-type'] ?? '')) {
      done(unsupportedMediaType(request.headers['content-type']), undefined)
      return
    }
    // Decoded as it stands, invalid UTF-8 would be stored with U+FFFD in its place.
    if (!isUtf8(body as Buffer)) {
      done(new ApiError(400, 'invalid_json', 'Request body is not valid UTF-8'), undefined)
      return
    }
    const bodyTaken = takesBody(request)
    // An operation that takes no body (DELETE, rotate-secret) has none to miss: clients that send
    // Content-Type on every request send it there too.
    if ((body as Buffer).length === 0 && !bodyTaken) {
      done(null, undefined)
      return
    }
    try {
      const value = parseJsonBody((body as Buffer).toString('utf8'))
      done(bodyTaken || isEmptyObject(value) ? null : BODY_NOT_TAKEN, bodyTaken ? value : undefined)
    } catch (error) {
      done(error as Error, undefined)
    }
  })
}, { name: 'json-body' })
