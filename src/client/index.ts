/**
 * A typed client for the Pet Store API: openapi-fetch over the types generated from the served OpenAPI
 * document (./schema.ts). Import it as `petstore/client`.
 *
 * Ids, categoryIds and petIds are int64 on the wire. By default they are `number`, as `JSON.parse`
 * reads them: exact up to 2^53 - 1. With `int64: 'bigint'` they are read and written as `bigint`,
 * exact over the whole range.
 */
import { parse as parseExact, parseNumberAndBigInt, stringify as stringifyExact } from 'lossless-json'
import createFetchClient, { type Client } from 'openapi-fetch'
import type { components, paths } from './schema.js'

export type { components, operations, paths } from './schema.js'

type Schemas = components['schemas']

export type Pet = Schemas['Pet']
export type NewPet = Schemas['NewPet']
export type PetStatus = Schemas['PetStatus']
export type ErrorBody = Schemas['Error']
/** Beta: changes only with 30 days' notice. */
export type Category = Schemas['Category']
/** Beta: changes only with 30 days' notice. */
export type NewCategory = Schemas['NewCategory']
/** Experimental: may change without a new API version. */
export type Order = Schemas['Order']
/** Experimental: may change without a new API version. */
export type NewOrder = Schemas['NewOrder']
/** Experimental: may change without a new API version. */
export type OrderStatus = Schemas['OrderStatus']
/** Beta: changes only with 30 days' notice. A delivered webhook's body is an Event. */
export type Event = Schemas['Event']
/** Beta: changes only with 30 days' notice. */
export type Webhook = Schemas['Webhook']
/** Beta: changes only with 30 days' notice. */
export type NewWebhook = Schemas['NewWebhook']
/** Beta: changes only with 30 days' notice. */
export type WebhookDelivery = Schemas['WebhookDelivery']
/**
 * What any call's `error` may also be: the text of an answer that is not the API's, from something
 * between the client and it (a proxy's HTML 502), as openapi-fetch gives a body that is not JSON.
 */
interface AnswerNotTheApis { default: { headers: Record<string, unknown>, content: { 'text/plain': string } } }
type WithAnswersNotTheApis<O> = { [K in keyof O]: K extends 'responses' ? O[K] & AnswerNotTheApis : O[K] }
/** The API's paths as the client calls them: each operation's answers, and one that is not the API's. */
export type ClientPaths = { [P in keyof paths]: { [M in keyof paths[P]]: WithAnswersNotTheApis<paths[P][M]> } }
export type PetStoreClient = Client<ClientPaths>

/** `T` with its numbers as bigint: every number in the API's resources (Pet, Order) is an int64. */
type BigIntNumbers<T> = T extends number ? bigint : T extends object ? { [K in keyof T]: BigIntNumbers<T[K]> } : T
/** `T` with its numbers as number or bigint, for what the client sends. */
type BigIntOrNumbers<T> = T extends number ? number | bigint : T extends object ? { [K in keyof T]: BigIntOrNumbers<T[K]> } : T
/** Every success's body is read losslessly (see readingExactly); error bodies hold no int64. */
type ExactResponses<R> = { [Status in keyof R]: `${Status & number}` extends `2${string}` ? BigIntNumbers<R[Status]> : R[Status] }
type ExactOperation<O> = { [K in keyof O]: K extends 'responses' ? ExactResponses<O[K]> : K extends 'requestBody' | 'parameters' ? BigIntOrNumbers<O[K]> : O[K] }
/** The API's paths with the resources' int64 fields as bigint (responses) or number | bigint (parameters and request bodies). */
export type ExactPaths = { [P in keyof ClientPaths]: { [M in keyof ClientPaths[P]]: ExactOperation<ClientPaths[P][M]> } }
/** The client with `int64: 'bigint'`. */
export type ExactPetStoreClient = Client<ExactPaths>

export interface PetStoreClientOptions {
  /** The server URL, ending in /v1: one of the OpenAPI document's `servers`, e.g. `http://localhost:8080/v1`. */
  baseUrl: string
  /** An API key made by `petstore keys create`. */
  apiKey: string
  /** Another fetch, e.g. one with a proxy. */
  fetch?: (request: Request) => Promise<Response>
  /**
   * The longest wait for an answer, its head and body, in milliseconds (default 30,000; 0: undici's
   * own bounds, five minutes each): past it the call throws a `TimeoutError` (a DOMException), where a
   * server that takes the connection and never answers, or stalls in the body, held it those five
   * minutes. The event stream's body is read without it, so that it is not cut: bound that with
   * the call's own `signal`.
   */
  timeoutMs?: number
  /**
   * How int64 fields are read: `number` (the default; exact up to 2^53 - 1) or `bigint` (exact over the
   * whole int64 range: bodies are parsed and written with a lossless JSON parser).
   */
  int64?: 'number' | 'bigint'
}

/**
 * Creates a client. Each call returns `{ data, error, response }`: `data` on a 2xx, `error` (the Error
 * body) otherwise.
 *
 * @example
 * const client = createClient({ baseUrl: 'http://localhost:8080/v1', apiKey: process.env.API_KEY! })
 * const { data: pet, error } = await client.POST('/pets', { body: { name: 'Rex', categoryId: 3 } })
 */
// No overload takes a mode that may be either: the union of the two clients it would return has no
// call that compiles, an error far from its cause.
export function createClient (options: PetStoreClientOptions & { int64: 'bigint' }): ExactPetStoreClient
export function createClient (options: PetStoreClientOptions & { int64?: 'number' }): PetStoreClient
export function createClient ({ baseUrl, apiKey, fetch = globalThis.fetch, timeoutMs = 30_000, int64 = 'number' }: PetStoreClientOptions): PetStoreClient | ExactPetStoreClient {
  if (!(timeoutMs >= 0)) throw new RangeError(`timeoutMs is ${timeoutMs}: give 0 (fetch's own bound) or more milliseconds`)
  // Sent as "Bearer undefined", it got a 401 saying the key was invalid or revoked.
  if (typeof apiKey !== 'string' || apiKey.trim() === '') throw new TypeError('apiKey is missing or empty: give the API key that petstore keys create printed (process.env.API_KEY unset, say)')
  const client = createFetchClient<ClientPaths>({
    baseUrl,
    headers: { authorization: `Bearer ${apiKey}` },
    // Past the longest wait a timer takes (about 24.8 days), setTimeout fires at once: as good as none.
    fetch: timeoutMs === 0 || timeoutMs > MAX_TIMER_MS ? fetch : withDeadline(fetch, timeoutMs),
    ...(int64 === 'bigint' ? { bodySerializer: (body: unknown) => stringifyExact(body) } : {})
  })
  if (int64 === 'bigint') return withCallsWrapped<ExactPetStoreClient>(client, (call) => emptyErrorAsNone(readingExactly(call)))
  return withCallsWrapped<PetStoreClient>(client, emptyErrorAsNone)
}

const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * `fetch`, refused with a TimeoutError when the answer takes longer than `timeoutMs`: its head, and
 * its body but for an event stream's, which lasts as long as the reader wants.
 */
function withDeadline (fetch: (request: Request) => Promise<Response>, timeoutMs: number): (request: Request) => Promise<Response> {
  return async (request) => {
    const deadline = new AbortController()
    // The caller's abort ends the call too, with its own reason.
    const forward = () => { deadline.abort(request.signal.reason) }
    const bounded = new Request(request, { signal: deadline.signal })
    const release = () => {
      awaited.delete(request)
      awaited.delete(bounded)
    }
    const settled = () => {
      clearTimeout(timer)
      request.signal.removeEventListener('abort', forward)
      release()
    }
    const timer = setTimeout(() => {
      deadline.abort(new DOMException(`No answer within ${timeoutMs} ms (timeoutMs)`, 'TimeoutError'))
      settled()
    }, timeoutMs)
    // The connection keeps the process alive while the answer comes; a body left unread (a stream the
    // caller dropped) must not keep it for the rest of the deadline.
    timer.unref()
    if (request.signal.aborted) forward()
    else request.signal.addEventListener('abort', forward, { once: true })
    awaited.add(request).add(bounded)
    let response: Response
    try {
      response = await fetch(bounded)
    } catch (error) {
      settled()
      throw error
    }
    if (response.body === null) {
      settled()
      return response
    }
    // An event stream's body is read past the deadline, as is one whose status a Response cannot be
    // made with (a proxy's 999): still the caller's to abort, its Requests held as long as the body is.
    if (isEventStream(response) || response.status < 200 || response.status > 599) {
      clearTimeout(timer)
      release()
      Object.defineProperty(response.body, REQUESTS_OF_BODY, { value: [request, bounded] })
      return response
    }
    // The deadline's abort errors the body being read; the timer ends with it, read or cancelled.
    const body = response.body.pipeThrough(new TransformStream({ flush: settled }))
    const boundedResponse = new Response(body, response)
    // What a Response made anew does not take from another.
    for (const property of ['url', 'redirected', 'type'] as const) Object.defineProperty(boundedResponse, property, { value: response[property] })
    return boundedResponse
  }
}

/**
 * The Requests whose answer is awaited: openapi-fetch's, which follows the caller's signal, and the
 * one made to follow the deadline. undici's Request follows the signal it is made with through a weak
 * reference (undici#4068): one that nothing held while its answer was awaited was collected at the
 * next garbage collection, the abort went nowhere, and a call to a server that never answered waited
 * undici's five minutes (an event stream, for good).
 */
const awaited = new Set<Request>()
const REQUESTS_OF_BODY = Symbol('the Requests whose signals abort this body')

function isEventStream (response: Response): boolean {
  return response.headers.get('content-type')?.toLowerCase().startsWith('text/event-stream') === true
}

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'] as const
type Call = (url: string, init?: Record<string, unknown>) => Promise<{ data?: unknown, error?: unknown }>

/** `client` with each of its calls, by method or by `request`, made through `wrap`. */
function withCallsWrapped<Wrapped> (client: PetStoreClient, wrap: (call: Call) => Call): Wrapped {
  const wrapped: Record<string, unknown> = { ...client }
  for (const method of METHODS) wrapped[method] = wrap(client[method] as unknown as Call)
  wrapped.request = (method: string, url: string, init?: Record<string, unknown>) => (wrapped[method.toUpperCase()] as Call)(url, init)
  return wrapped as Wrapped
}

/**
 * An error answer without a body gives `error` undefined. openapi-fetch gives the text of one that is
 * not JSON: "" for an empty body sent in chunks, where after a `Content-Length: 0` it gives undefined.
 */
function emptyErrorAsNone (call: Call): Call {
  return async (url, init) => {
    const result = await call(url, init)
    return result.error === '' ? { ...result, error: undefined } : result
  }
}

/**
 * The call with its JSON success body read as text and parsed losslessly: integers become bigint
 * (openapi-fetch parses with JSON.parse, which rounds them past 2^53). A call that asks for another
 * `parseAs` (a stream, a blob) gets it untouched.
 */
function readingExactly (call: Call): Call {
  return async (url, init = {}) => {
    if (init.parseAs !== undefined && init.parseAs !== 'json') return await call(url, init)
    const result = await call(url, { ...init, parseAs: 'text' })
    if (typeof result.data !== 'string') return result
    return { ...result, data: result.data === '' ? undefined : parseExact(result.data, null, parseNumberAndBigInt) }
  }
}

/**
 * The cursor of the next page from a list response's `Link: rel="next"` header, or undefined on the
 * last page. listEvents pages by `after`, not a cursor: its consumers read after the last event's id.
 */
export function nextCursor (response: Response): string | undefined {
  const link = response.headers.get('link')
  const next = link?.match(/<([^>]*)>\s*;\s*rel="next"/)?.[1]
  if (next === undefined) return undefined
  const query = new URL(next, 'http://relative.invalid').searchParams
  const cursor = query.get('cursor')
  if (cursor !== null) return cursor
  // Undefined would end the caller's paging with more to read.
  throw new Error(query.has('after') ? `nextCursor: ${next} pages by \`after\`: read after the last event's id` : `nextCursor: ${next} names no cursor`)
}
