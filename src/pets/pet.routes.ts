import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { stringify as stringifyExact } from 'lossless-json'
import type { Db } from '../db/database.js'
import type { StoreReadCache } from '../db/read-cache.js'
import { ApiError, errorResponses } from '../errors.js'
import type { IdempotentCreates } from '../idempotency/idempotent-create.js'
import type { CursorCodec } from '../pagination/cursor.js'
import { nextPageLink } from '../pagination/next-page-link.js'
import { afterIdOfCursor, DEFAULT_PAGE_LIMIT } from '../pagination/page-query.js'
import { deprecationHeaders } from '../plugins/deprecation.js'
import type { PetInsertQueue } from './pet-insert-queue.js'
import { findPetJsonById, findPetPage, insertPet } from './pet.repository.js'
import { CreatePetHeaders, DEFAULT_PET_STATUS, ListPetsQuery, NewPet, Pet, PetIdParams, PetList, type PetStatus } from './pet.schemas.js'

export interface PetRoutesOptions {
  db: Db
  cursorCodec: CursorCodec<PetStatus>
  idempotentCreates: IdempotentCreates
  insertQueue: PetInsertQueue
  /** Serves repeated pages of an unchanged store from memory. */
  readCache: StoreReadCache
  /** Turns a path under /v1 into the URL clients should follow (absolute when PUBLIC_BASE_URL is set). */
  apiUrl: (path: string) => string
}

const GET_PET_DEPRECATED_SINCE = new Date('2026-11-22T00:00:00Z')
const GET_PET_SUNSET = new Date('2030-12-05T00:00:00Z')

/** listPets, createPet and getPet: thin handlers over the pet repository. */
export const petRoutes: FastifyPluginAsyncTypebox<PetRoutesOptions> = async (app, { db, cursorCodec, idempotentCreates, insertQueue, readCache, apiUrl }) => {
  app.get('/pets', {
    schema: {
      operationId: 'listPets',
      summary: 'List animals',
      description: 'Animals in ascending id order. When more follow, the response has a `Link` header with `rel="next"`.',
      tags: ['pets'],
      querystring: ListPetsQuery,
      response: { 200: { ...PetList, description: 'A page of animals' }, ...errorResponses(400, 401, 429, 503) }
    }
  }, async (request, reply) => {
    const { limit = DEFAULT_PAGE_LIMIT, status, cursor } = request.query
    const afterId = afterIdOfCursor(cursorCodec, cursor, status)
    const page = await readCache.get(`pets?${status}&${afterId}&${limit}`, async () => {
      const { json, nextAfterId } = await findPetPage(db, { status, afterId, limit })
      return { json, link: nextAfterId === undefined ? undefined : nextPageLink(apiUrl, cursorCodec, { path: '/pets', limit, status, afterId: nextAfterId }) }
    })
    if (page.link !== undefined) reply.header('link', page.link)
    return sendJson(reply, page.json)
  })

  app.post('/pets', {
    schema: {
      operationId: 'createPet',
      summary: 'Add an animal',
      tags: ['pets'],
      headers: CreatePetHeaders,
      body: NewPet,
      response: { 201: { ...Pet, description: 'The animal as stored; `Location` gives its URL' }, ...errorResponses(400, 401, 409, 413, 415, 422, 429, 503) }
    }
  }, async (request, reply) => {
    const { name, categoryId, status = DEFAULT_PET_STATUS } = request.body
    const idempotencyKey = request.headers['idempotency-key']
    if (idempotencyKey === undefined) {
      const pet = await insertQueue.insert({ name, categoryId, status })
      reply.code(201).header('location', apiUrl(`/pets/${pet.id}`))
      return pet
    }
    const result = await idempotentCreates.run(request.apiKeyId, idempotencyKey, request.body, async (trx) => {
      const pet = await insertPet(trx, { name, categoryId, status })
      // Stored as text and sent as stored, so a replay is byte for byte the first answer.
      return { status: 201, body: stringifyExact(pet)!, location: apiUrl(`/pets/${pet.id}`) }
    })
    reply.code(result.status as 201) // only successful creates are stored
    if (result.location !== null) reply.header('location', result.location)
    if (result.replayed) reply.header('idempotent-replayed', 'true')
    return sendJson(reply, result.body)
  })

  app.get('/pets/:petId', {
    config: {
      deprecation: deprecationHeaders({
        since: GET_PET_DEPRECATED_SINCE,
        sunset: GET_PET_SUNSET,
        successor: apiUrl('/pets?status=available')
      })
    },
    schema: {
      operationId: 'getPet',
      summary: 'Fetch one animal by id (deprecated: removed on 5 December 2030; use listPets)',
      tags: ['pets'],
      deprecated: true,
      params: PetIdParams,
      response: { 200: { ...Pet, description: 'The animal' }, ...errorResponses(400, 401, 404, 429, 503) }
    }
  }, async (request, reply) => {
    const { petId } = request.params
    const pet = await readCache.get(`pet ${petId}`, async () => {
      const json = await findPetJsonById(db, petId)
      return json === undefined ? undefined : { json }
    })
    if (pet === undefined) throw new ApiError(404, 'not_found', `No pet with id ${petId}`)
    return sendJson(reply, pet.json)
  })
}

/** Sends JSON text the store or the idempotency record already holds, as it is, not through the typed serializer. */
function sendJson (reply: FastifyReply<any>, json: string): FastifyReply<any> {
  return reply.type('application/json; charset=utf-8').send(json)
}
