import swagger, { type SwaggerTransformObject } from '@fastify/swagger'
import type { FastifySchema } from 'fastify'
import fp from 'fastify-plugin'
import { SCOPES, type Scope } from '../api-keys/scopes.js'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { ERROR_CATALOG } from '../errors.js'
import { boundInt64, stringifyDocument } from '../openapi/int64-bounds.js'
import { namedSchemaComponents, referenceNamed } from '../openapi/named-schemas.js'
import { declareMethodNotAllowed, describeHeadOperations } from '../openapi/other-methods.js'
import { declareHeaders, GENERAL_HEADERS, HEADER_COMPONENTS } from '../openapi/response-headers.js'
import { shareErrorResponses, shareParameters } from '../openapi/shared-components.js'
import { declareUnreadRequests } from '../openapi/unread-requests.js'
import { declareUriTooLong } from '../openapi/uri-too-long.js'
import { WEBHOOK_DELIVERY_DOCUMENT } from '../webhooks/webhook-delivery-document.js'
import { pathNotPercentEncoded } from './error-handler.js'

declare module 'fastify' {
  interface FastifySchema {
    /** Copied into the operation: `experimental` operations may change at any time, `beta` ones with 30 days' notice. */
    'x-stability'?: 'experimental' | 'beta'
  }
}

const API_PREFIX = '/v1'

const DESCRIPTION = `A store of animals for sale, as JSON over HTTP.

Every request needs \`Authorization: Bearer <API_KEY>\` (make a key with \`petstore keys create\`), and the
key must hold the scope the operation names (${SCOPES.map((scope) => `\`${scope}\``).join(', ')}; \`*:read\` and
\`*\` stand for every read scope and for every scope). A key expiring within 7 days says so on every
answer, in \`API-Key-Expiration\` (an HTTP-date).
Every error has the \`Error\` body \`{code, message, status}\`, where \`status\` equals the HTTP status:

| code | status | when |
|---|---|---|
${Object.entries(ERROR_CATALOG).map(([code, { status, meaning }]) => `| \`${code}\` | ${status} | ${meaning} |`).join('\n')}

Stability: an operation marked \`x-stability: experimental\` may change or go at any time, one marked
\`beta\` changes only with 30 days' notice, and every other one changes only as the compatibility policy
(docs/compatibility.md) allows: additions within /v1, anything else through a deprecation with
\`Deprecation\`, \`Sunset\` and \`Link\` headers. Every answer of a marked operation carries
\`API-Stability\` with its marker.

Besides the headers each response declares, every answer carries these security headers, and every
authenticated one \`Cache-Control: no-store\`:

| header | value |
|---|---|
${Object.entries(GENERAL_HEADERS).filter(([name]) => name !== 'cache-control').map(([name, value]) => `| \`${name}\` | \`${value}\` |`).join('\n')}
`

/**
 * An operation's required scope, in its security requirement (OpenAPI lets a bearer scheme list the
 * roles it needs) and in its description, which /docs shows.
 */
function withScope (schema: FastifySchema, scope: Scope | undefined): FastifySchema {
  if (scope === undefined) return schema
  const description = `${(schema as { description?: string }).description ?? ''}\n\nRequires an API key with the scope \`${scope}\`.`.trimStart()
  return { ...schema, security: [{ bearerAuth: [scope] }], description } as FastifySchema
}

/** The OpenAPI servers: production (or this host when PUBLIC_BASE_URL is unset) and staging, each ending in /v1. */
function servers (config: Config) {
  const list = [{ url: `${config.PUBLIC_BASE_URL ?? ''}${API_PREFIX}`, description: config.PUBLIC_BASE_URL === undefined ? 'This server' : 'Production' }]
  if (config.STAGING_BASE_URL !== undefined) list.push({ url: `${config.STAGING_BASE_URL}${API_PREFIX}`, description: 'Staging' })
  return list
}

/**
 * Collects every route's schema into the OpenAPI 3.1 document served at /v1/openapi.json. Routes
 * must be registered after this plugin.
 */
export default fp<{ config: Config, clock: Clock }>(async (app, { config, clock }) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Pet Store',
        version: '1.0.0',
        description: DESCRIPTION,
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'Pet Store maintainers' }
      },
      servers: servers(config),
      tags: [
        { name: 'pets', description: 'Animals for sale' },
        { name: 'categories', description: '**Beta**: the categories that animals\' `categoryId` names. They change only with 30 days\' notice.' },
        { name: 'events', description: '**Beta**: the event log, every change to a pet, a category or an order. It changes only with 30 days\' notice.' },
        {
          name: 'webhooks',
          description: '**Beta**: subscriptions that have events POSTed to a URL, signed after Standard Webhooks. They change only with 30 days\' notice.'
        },
        { name: 'store', description: '**Experimental**: orders that move a pet from `available` to `pending` to `sold`. They may change without a new API version.' }
      ],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key made by `petstore keys create`' } }
      },
      security: [{ bearerAuth: [] }]
    },
    // Paths are relative to the servers, which end in /v1 whatever prefix PUBLIC_BASE_URL has.
    stripBasePath: false,
    exposeHeadRoutes: true,
    transform: ({ schema, url, route }) => ({
      schema: withScope(schema, route.config?.scope),
      url: url.startsWith(`${API_PREFIX}/`) ? url.slice(API_PREFIX.length) : url
    }),
    // The named schemas go in last: @fastify/swagger would drop what a component says beside a $ref.
    transformObject: (documentObject) => {
      const document = (documentObject as { openapiObject: { paths?: unknown, components?: { schemas?: object } } }).openapiObject
      const paths = boundInt64(referenceNamed(document.paths)) as Parameters<typeof declareHeaders>[0]
      declareMethodNotAllowed(paths)
      declareUriTooLong(paths, app.initialConfig.routerOptions?.maxParamLength ?? 0)
      declareUnreadRequests(paths, app.server)
      declareNoContent(paths)
      describeHeadOperations(paths)
      declareHeaders(paths)
      const components = {
        ...document.components,
        schemas: boundInt64({ ...document.components?.schemas, ...namedSchemaComponents() }),
        responses: shareErrorResponses(paths),
        parameters: shareParameters(paths),
        headers: HEADER_COMPONENTS
      }
      return { ...document, components, paths, webhooks: WEBHOOK_DELIVERY_DOCUMENT } as ReturnType<SwaggerTransformObject>
    }
  })

  // Deprecated operations, for the document served once their sunset has passed.
  const sunsets: Array<{ path: string, method: string, sunset: Date }> = []
  app.addHook('onRoute', (route) => {
    const sunset = route.config?.deprecation?.sunset
    if (sunset === undefined) return
    const path = route.url.slice(API_PREFIX.length).replace(/:(\w+)/g, '{$1}')
    for (const method of [route.method].flat()) sunsets.push({ path, method: method.toLowerCase(), sunset })
  })

  // Made once for each set of operations removed (which only grows as sunsets pass), as one Buffer:
  // made for each request, its 155 KB cost a millisecond, and the answers pipelined to a client that
  // does not read them each held a copy (gigabytes from a few connections).
  let document: { removed: number, body: Buffer } | undefined
  app.get(`${API_PREFIX}/openapi.json`, { schema: { hide: true } }, async (_request, reply) => {
    reply.type('application/json; charset=utf-8')
    const removed = sunsets.filter(({ sunset }) => clock.now() >= sunset.getTime())
    if (document?.removed !== removed.length) {
      const body = stringifyDocument(removed.length === 0 ? app.swagger() : withoutRemovedAnswers(app.swagger(), removed))
      document = { removed: removed.length, body: Buffer.from(body) }
    }
    return document.body
  })
}, { name: 'openapi' })

/** A 204 has no body: @fastify/swagger gives every response a JSON content, which clients would wait for. */
function declareNoContent (paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>): void {
  for (const operation of Object.values(paths).flatMap((path) => Object.values(path))) delete (operation.responses?.['204'] as { content?: unknown } | undefined)?.content
}

// What a removed operation still answers: a key checked first (401, 429, 403), a service that fails
// or is overloaded (500, 503), a request not read whole (408, 417, 431, 501), the router's answers
// before any route (400, 405, 414), and its 410.
const REMOVED_OPERATION_ANSWERS = ['400', '401', '403', '405', '408', '410', '414', '417', '429', '431', '500', '501', '503']
// A removed operation's parameters are no longer read: its 400 is the router's alone, before any hook
// (no key read, no deprecation headers), as its 414 is.
const ROUTER_BAD_REQUEST = 'The path is not valid percent-encoded UTF-8 (or a request target in absolute form names no valid host or port), answered before the key is read'
const ROUTER_BAD_REQUEST_BODY = { schema: { $ref: '#/components/schemas/Error' }, example: pathNotPercentEncoded().toBody() }

/**
 * The document once operations are past their sunset: each stays, deprecated, with only the answers
 * it still gives (its 410, the key's checks and the router's answers before it), so that clients
 * generated from it learn that it is gone.
 */
function withoutRemovedAnswers (document: unknown, removed: Array<{ path: string, method: string }>): unknown {
  const copy = structuredClone(document) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }
  for (const { path, method } of removed) {
    const operation = copy.paths[path]?.[method]
    if (operation === undefined) continue
    operation.responses = Object.fromEntries(REMOVED_OPERATION_ANSWERS.map((status) => [status, operation.responses[status]]))
    // A HEAD answer has no body.
    operation.responses['400'] = { description: ROUTER_BAD_REQUEST, headers: {}, ...(method !== 'head' && { content: { 'application/json': ROUTER_BAD_REQUEST_BODY } }) }
  }
  return copy
}
