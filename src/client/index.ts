/**
 * A typed client for the Pet Store API: openapi-fetch over the types generated from the served OpenAPI
 * document (./schema.ts). Import it as `petstore/client`.
 *
 * Ids and categoryIds are int64 on the wire and `number` here, as `JSON.parse` reads them: exact up to
 * 2^53 - 1. Clients that need the full int64 range should parse the raw body with a lossless parser.
 */
import createFetchClient, { type Client } from 'openapi-fetch'
import type { components, paths } from './schema.js'

export type { components, operations, paths } from './schema.js'

type Schemas = components['schemas']

export type Pet = Schemas['Pet']
export type NewPet = Schemas['NewPet']
export type PetStatus = Schemas['PetStatus']
export type ErrorBody = Schemas['Error']
/** Experimental: may change without a new API version. */
export type Order = Schemas['Order']
/** Experimental: may change without a new API version. */
export type NewOrder = Schemas['NewOrder']
/** Experimental: may change without a new API version. */
export type OrderStatus = Schemas['OrderStatus']
export type PetStoreClient = Client<paths>

export interface PetStoreClientOptions {
  /** The server URL, ending in /v1: one of the OpenAPI document's `servers`, e.g. `http://localhost:8080/v1`. */
  baseUrl: string
  /** An API key made by `petstore keys create`. */
  apiKey: string
  /** Another fetch, e.g. one with a proxy or a timeout. */
  fetch?: (request: Request) => Promise<Response>
}

/**
 * Creates a client. Each call returns `{ data, error, response }`: `data` on a 2xx, `error` (the Error
 * body) otherwise.
 *
 * @example
 * const client = createClient({ baseUrl: 'http://localhost:8080/v1', apiKey: process.env.API_KEY! })
 * const { data: pet, error } = await client.POST('/pets', { body: { name: 'Rex', categoryId: 3 } })
 */
export function createClient ({ baseUrl, apiKey, fetch }: PetStoreClientOptions): PetStoreClient {
  return createFetchClient<paths>({
    baseUrl,
    headers: { authorization: `Bearer ${apiKey}` },
    ...(fetch === undefined ? {} : { fetch })
  })
}

/** The cursor of the next page from a list response's `Link: rel="next"` header, or undefined on the last page. */
export function nextCursor (response: Response): string | undefined {
  const link = response.headers.get('link')
  const next = link?.match(/<([^>]*)>\s*;\s*rel="next"/)?.[1]
  if (next === undefined) return undefined
  return new URL(next, 'http://relative.invalid').searchParams.get('cursor') ?? undefined
}
