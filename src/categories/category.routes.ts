import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { ApiError, errorExample, errorResponses, type ErrorResponse } from '../errors.js'
import { IdempotencyKeyHeaders } from '../idempotency/idempotency-key-header.js'
import type { IdempotentCreates } from '../idempotency/idempotent-create.js'
import { responseHeaders } from '../openapi/response-headers.js'
import type { CursorCodec } from '../pagination/cursor.js'
import { nextPageLink } from '../pagination/next-page-link.js'
import { afterIdOfCursor, DEFAULT_PAGE_LIMIT, PAGE_LIMIT_INVALID } from '../pagination/page-query.js'
import { cut } from '../printable.js'
import { sendStoredAnswer } from '../send-json.js'
import { createCategory, findCategoryById, findCategoryPage } from './category.repository.js'
import { Category, CategoryIdParams, CategoryList, ListCategoriesQuery, NewCategory } from './category.schemas.js'

export interface CategoryRoutesOptions {
  db: Db
  clock: Clock
  cursorCodec: CursorCodec<never>
  idempotentCreates: IdempotentCreates
  /** Called after a change is committed, so that its events go out at once. */
  committed: () => void
  /** Turns a path under /v1 into the URL clients should follow. */
  apiUrl: (path: string) => string
}

const BETA = { 'x-stability': 'beta', tags: ['categories'] } as const

const CATEGORY_EXISTS = {
  status: 409,
  description: 'A category of this name exists (compared without regard to case); nothing was created. Or a request with the same `Idempotency-Key` is still being processed (`idempotency_key_in_use`, with `Retry-After`)',
  code: 'category_exists',
  example: 'A category named "dogs" exists already (id 3); names are compared without regard to case',
  headers: ['Retry-After']
} satisfies ErrorResponse
const CATEGORY_ID_INVALID = errorExample(400, 'Path parameter `categoryId` must be an integer from 1 to 9223372036854775807')
const CATEGORY_NOT_FOUND = errorExample(404, 'No category with id 3')

// What the 409 quotes of the name, at most (UTF-16 units): any name's 100 characters, not the kilobytes of whitespace that may pad it.
const MAX_QUOTED_NAME = 200

function categoryExists ({ id, name }: Category): ApiError {
  return new ApiError(409, 'category_exists', `A category named ${JSON.stringify(cut(name, MAX_QUOTED_NAME))} exists already (id ${id}); names are compared without regard to case`)
}

/** Categories (beta): the groups that pets' `categoryId` names, each with a name no other has, whatever its case. */
export const categoryRoutes: FastifyPluginAsyncTypebox<CategoryRoutesOptions> = async (app, { db, clock, cursorCodec, idempotentCreates, committed, apiUrl }) => {
  const categoryUrlPrefix = apiUrl('/categories/')

  app.post('/categories', {
    config: { scope: 'categories:write' },
    schema: {
      ...BETA,
      operationId: 'createCategory',
      summary: 'Add a category (beta)',
      description: 'Stores the category and answers it with the id the service gave it. Names are unique without regard to case: ' +
        'they are compared after Unicode NFC normalization and full case folding, so `Straße` and `STRASSE` are the same name. ' +
        'Send an `Idempotency-Key` to make retries safe.',
      headers: IdempotencyKeyHeaders,
      body: NewCategory,
      response: {
        201: { ...Category, description: 'The category as stored; `Location` gives its URL', headers: responseHeaders('Location', 'Idempotent-Replayed') },
        ...errorResponses(errorExample(400, '`name` must be 1 to 100 characters once whitespace at both ends is trimmed, in well-formed Unicode without U+0000'), 401, 403, CATEGORY_EXISTS, 413, 415, 422, 429, 500, 503)
      }
    }
  }, async (request, reply) => {
    const { name } = request.body
    const idempotencyKey = request.headers['idempotency-key']
    if (idempotencyKey === undefined) {
      const created = await createCategory(db, clock, name)
      if (created.outcome === 'exists') throw categoryExists(created.existing)
      if (created.outcome !== 'created') throw new Error('a create without an idempotency key was replayed')
      committed()
      reply.code(201).header('location', `${categoryUrlPrefix}${created.category.id}`)
      return created.category
    }
    const result = await idempotentCreates.create(request.apiKeyId, idempotencyKey, request.body, categoryUrlPrefix, async (claim) => {
      const created = await createCategory(db, clock, name, claim)
      if (created.outcome === 'exists') throw categoryExists(created.existing)
      return created
    })
    if (!result.replayed) committed()
    return sendStoredAnswer(reply, result)
  })

  app.get('/categories', {
    config: { scope: 'categories:read' },
    schema: {
      ...BETA,
      operationId: 'listCategories',
      summary: 'List categories (beta)',
      description: 'Categories in ascending id order. When more follow, the response has a `Link` header with `rel="next"`.',
      querystring: ListCategoriesQuery,
      response: { 200: { ...CategoryList, description: 'A page of categories', headers: responseHeaders('Link') }, ...errorResponses(PAGE_LIMIT_INVALID, 401, 403, 429, 500, 503) }
    }
  }, async (request, reply) => {
    const { limit = DEFAULT_PAGE_LIMIT, cursor } = request.query
    const afterId = afterIdOfCursor(cursorCodec, cursor, {})
    const page = await findCategoryPage(db, { afterId, limit })
    if (page.nextAfterId !== undefined) {
      reply.header('link', nextPageLink(apiUrl, cursorCodec, { path: '/categories', limit, filter: {}, afterId: page.nextAfterId }))
    }
    return page.categories
  })

  app.get('/categories/:categoryId', {
    config: { scope: 'categories:read' },
    schema: {
      ...BETA,
      operationId: 'getCategory',
      summary: 'Fetch one category (beta)',
      description: 'The category with this id.',
      params: CategoryIdParams,
      response: { 200: { ...Category, description: 'The category' }, ...errorResponses(CATEGORY_ID_INVALID, 401, 403, CATEGORY_NOT_FOUND, 429, 500, 503) }
    }
  }, async (request) => {
    const { categoryId } = request.params
    const category = await findCategoryById(db, categoryId)
    if (category === undefined) throw new ApiError(404, 'not_found', `No category with id ${categoryId}`)
    return category
  })
}
