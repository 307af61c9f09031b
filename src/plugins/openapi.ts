import swagger from '@fastify/swagger'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { ERROR_CODES, ErrorBody } from '../errors.js'

/**
 * Collects every route's schema into the OpenAPI 3.1 document served at /v1/openapi.json. Routes
 * must be registered after this plugin.
 */
export default fp<{ config: Config }>(async (app, { config }) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Pet Store',
        version: '1.0.0',
        description: 'A store of animals for sale. Every error has the Error body; its `code` is one of: ' +
          ERROR_CODES.map((code) => `\`${code}\``).join(', ') + '.'
      },
      servers: [{ url: `${config.PUBLIC_BASE_URL ?? ''}/v1` }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key made by `petstore keys create`' } },
        schemas: { Error: ErrorBody }
      },
      security: [{ bearerAuth: [] }]
    }
  })

  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}, { name: 'openapi' })
