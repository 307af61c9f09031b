import swaggerUi, { type FastifySwaggerUiOptions } from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { sendError } from './error-handler.js'

/**
 * The API reference page at /docs: Swagger UI rendering the served OpenAPI document. Every asset ships
 * in @fastify/swagger-ui, so the page works offline. The page needs scripts, styles and its data-URL
 * logo from this origin, so its routes relax the API's `default-src 'none'` policy to this one. Swagger
 * UI injects inline styles as it renders, so styles (never scripts) may be inline.
 */
const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'"
].join('; ')

/**
 * Swagger UI reads the document the README names, /v1/openapi.json, instead of the plugin's copy at
 * /docs/json, whose URL its initializer hard-codes: this script runs after that one and before the page
 * loads, and wraps the renderer the initializer calls. The document's URL is resolved from the page's
 * path, so that a proxy's path prefix is kept.
 */
const READ_SERVED_DOCUMENT = `const render = window.SwaggerUIBundle
window.SwaggerUIBundle = Object.assign(function (config) {
  const page = window.location.origin + window.location.pathname.replace(/\\/?$/, '/')
  return render(Object.assign({}, config, { url: new URL('../v1/openapi.json', page).href }))
}, render)
`

const DOCS_OPTIONS = {
  routePrefix: '/docs',
  staticCSP: DOCS_CONTENT_SECURITY_POLICY,
  theme: { title: 'Pet Store API reference', js: [{ filename: 'served-document.js', content: READ_SERVED_DOCUMENT }] },
  uiConfig: {
    // No top bar: it would offer to explore other documents.
    layout: 'BaseLayout',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 1,
    displayRequestDuration: true,
    tryItOutEnabled: false,
    persistAuthorization: false
  }
} satisfies FastifySwaggerUiOptions

// What makes the file server answer 416 or 412, which have no Error code: its small files are sent
// whole instead, as a server may ignore Range (RFC 9110, section 14.2).
const PARTIAL_OR_CONDITIONAL = ['range', 'if-range', 'if-match', 'if-unmodified-since']

const NO_FILE = new ApiError(404, 'not_found', 'No resource at this path')

// The plugin's own copy of the document, which it serves at these paths, is made by @fastify/swagger,
// whose int64 bounds are rounded (9223372036854776000, past int64): they lead to the one the API
// serves, relative so that a proxy's path prefix is kept.
const PLUGIN_DOCUMENTS = new Set(['/docs/json', '/docs/yaml'])
const SERVED_DOCUMENT = '../v1/openapi.json'
// Where the page's scripts and styles are served from.
const FILES_FOLDER = '/docs/static/'
const STOCK_PAGE = '/docs/static/index.html'

/**
 * What the file server refuses as a path (one that leaves its folder, `//`, a NUL byte: a 403 or 400)
 * names no file: a 404, as any other path that names nothing, rather than its bare "Forbidden".
 */
function fileServerError (error: Error): Error {
  const { statusCode } = error as { statusCode?: number }
  return !(error instanceof ApiError) && (statusCode === 400 || statusCode === 403) ? NO_FILE : error
}

/**
 * `publicBaseUrl` (PUBLIC_BASE_URL): its path, a proxy's prefix (`https://example.com/api`), starts the
 * page's links to its scripts and styles, which are otherwise root-relative (`/docs/static/...`).
 */
export default fp<{ publicBaseUrl: string | undefined }>(async (app, { publicBaseUrl }) => {
  const pathPrefix = publicBaseUrl === undefined ? '' : new URL(publicBaseUrl).pathname.replace(/\/$/, '')
  // In a context of its own, so that its hook and error handler hold for the page's routes alone.
  await app.register(async (docs) => {
    docs.addHook('onRequest', async (request, reply) => {
      if (PLUGIN_DOCUMENTS.has(request.routeOptions.url ?? '')) return await reply.code(308).header('location', SERVED_DOCUMENT).send()
      // The file server's index of that folder is the stock Swagger UI page, which loads no document;
      // the plugin sends its index.html to a root-relative /docs/ (a proxy's prefix lost), and to itself
      // when spelled with an escape (%69ndex.html).
      if (request.url.split('?', 1)[0] === FILES_FOLDER || request.routeOptions.url === STOCK_PAGE) throw NO_FILE
      for (const header of PARTIAL_OR_CONDITIONAL) delete request.raw.headers[header]
    })
    // Range is dropped above, so the file server's `Accept-Ranges: bytes` would offer what is never given.
    docs.addHook('onSend', (_request, reply, payload, done) => {
      reply.removeHeader('accept-ranges')
      done(null, payload)
    })
    docs.setErrorHandler((error: Error, request, reply) => { sendError(fileServerError(error), request, reply) })
    await docs.register(swaggerUi, { ...DOCS_OPTIONS, indexPrefix: pathPrefix === '' ? undefined : pathPrefix })
  })
}, { name: 'api-docs', dependencies: ['openapi'] })
