import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ApiError, errorExample, errorResponses } from '../errors.js'
import { IdempotencyKeyHeaders } from '../idempotency/idempotency-key-header.js'
import type { IdempotentCreates } from '../idempotency/idempotent-create.js'
import type { CursorCodec } from '../pagination/cursor.js'
import { nextPageLink } from '../pagination/next-page-link.js'
import { afterIdOfCursor, DEFAULT_PAGE_LIMIT, PAGE_LIMIT_INVALID } from '../pagination/page-query.js'
import { deprecation } from '../plugins/route-notices.js'
import { responseHeaders } from '../openapi/response-headers.js'
import { sendJson, sendStoredAnswer } from '../send-json.js'
import type { PetPage, PetStore } from '../store/pet-store.js'
import { DEFAULT_PET_STATUS, ListPetsQuery, NewPet, Pet, PetIdParams, PetList, type PetStatus } from './pet.schemas.js'

export interface PetRoutesOptions {
  pets: PetStore
  cursorCodec: CursorCodec<PetStatus>
  idempotentCreates: IdempotentCreates
  /** Called after a change is committed, so that its events go out at once. */
  committed: () => void
  /** Turns a path under /v1 into the URL clients should follow (absolute when PUBLIC_BASE_URL is set). */
  apiUrl: (path: string) => string
}

const GET_PET_DEPRECATED_SINCE = new Date('2026-11-22T00:00:00Z')
const GET_PET_SUNSET = new Date('2030-12-05T00:00:00Z')

/** listPets, createPet and getPet: thin handlers over the pet store. */
export const petRoutes: FastifyPluginAsyncTypebox<PetRoutesOptions> = async (app, { pets, cursorCodec, idempotentCreates, committed, apiUrl }) => {
  // A page the store answers from its cache is the same object each time: its link (an HMAC) is made once.
  const nextLinks = new WeakMap<PetPage, string>()
  const petUrlPrefix = apiUrl('/pets/')

  app.get('/pets', {
    config: { scope: 'pets:read' },
    schema: {
      operationId: 'listPets',
      summary: 'List animals',
      description: 'Animals in ascending id order. When more follow, the response has a `Link` header with `rel="next"`.',
      tags: ['pets'],
      querystring: ListPetsQuery,
      response: { 200: { ...PetList, description: 'A page of animals', headers: responseHeaders('Link') }, ...errorResponses(PAGE_LIMIT_INVALID, 401, 403, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { limit = DEFAULT_PAGE_LIMIT, status, categoryId, cursor } = request.query
    const afterId = afterIdOfCursor(cursorCodec, cursor, { status, categoryId })
    const page = await pets.findPage({ status, categoryId, afterId, limit })
    if (page.nextAfterId !== undefined) {
      let link = nextLinks.get(page)
      if (link === undefined) {
        link = nextPageLink(apiUrl, cursorCodec, { path: '/pets', limit, filter: { status, categoryId }, afterId: page.nextAfterId })
        nextLinks.set(page, link)
      }
      reply.header('link', link)
    }
    return sendJson(reply, page.json)
  })

  app.post('/pets', {
    config: { scope: 'pets:write' },
    schema: {
      operationId: 'createPet',
      summary: 'Add an animal',
      description: 'Stores the animal and answers it with the id the service gave it. Send an `Idempotency-Key` to make retries safe.',
      tags: ['pets'],
      headers: IdempotencyKeyHeaders,
      body: NewPet,
      response: {
        201: { ...Pet, description: 'The animal as stored; `Location` gives its URL', headers: responseHeaders('Location', 'Idempotent-Replayed') },
        ...errorResponses(400, 401, 403, 409, 413, 415, 422, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const { name, categoryId, status = DEFAULT_PET_STATUS } = request.body
    const idempotencyKey = request.headers['idempotency-key']
    if (idempotencyKey === undefined) {
      const created = await pets.create({ pet: { name, categoryId, status } })
      if (created.outcome !== 'created') throw new Error('a create without an idempotency key was replayed')
      committed()
      reply.code(201).header('location', `${petUrlPrefix}${created.pet.id}`)
      return created.pet
    }
    const result = await idempotentCreates.create(request.apiKeyId, idempotencyKey, request.body, petUrlPrefix,
      async (claim) => await pets.create({ pet: { name, categoryId, status }, idempotency: claim }))
    if (!result.replayed) committed()
    return sendStoredAnswer(reply, result)
  })

  app.get('/pets/:petId', {
    config: {
      scope: 'pets:read',
      deprecation: deprecation({
        since: GET_PET_DEPRECATED_SINCE,
        sunset: GET_PET_SUNSET,
        successor: apiUrl('/pets?status=available'),
        replacement: 'GET /v1/pets (listPets) with the status filter'
      })
    },
    schema: {
      operationId: 'getPet',
      summary: 'Fetch one animal by id (deprecated: removed on 5 December 2030; use listPets)',
      description: 'Deprecated since 22 November 2026 and removed on 5 December 2030. Use `GET /pets` (listPets) with the ' +
        '`status` filter instead. Answers carry `Deprecation`, `Sunset` and `Link: <...>; rel="successor-version"`. ' +
        'From 5 December 2030 it answers `410 gone` for any id.',
      tags: ['pets'],
      deprecated: true,
      params: PetIdParams,
      response: { 200: { ...Pet, description: 'The animal' }, ...errorResponses(errorExample(400, 'Path parameter `petId` must be an integer from 1 to 9223372036854775807'), 401, 403, 404, 410, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { petId } = request.params
    const json = await pets.findById(petId)
    if (json === undefined) throw new ApiError(404, 'not_found', `No pet with id ${petId}`)
    return sendJson(reply, json)
  })
}
