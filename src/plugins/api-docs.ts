import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'

/**
 * The API reference page at /docs: Swagger UI rendering the served OpenAPI document. Every asset ships
 * in @fastify/swagger-ui, so the page works offline. The page needs scripts, styles and its data-URL
 * logo from this origin, so its routes relax the API's `default-src 'none'` policy to this one. Swagger
 * UI injects inline styles as it renders, so styles (never scripts) may be inline.
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
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

export default fp(async (app) => {
  await app.register(swaggerUi, {
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
  })
}, { name: 'api-docs', dependencies: ['openapi'] })
