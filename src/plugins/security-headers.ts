import helmet from '@fastify/helmet'
import fp from 'fastify-plugin'

/**
 * Security headers for a JSON API: nothing may be rendered, framed or sniffed from its answers, and
 * browsers keep to HTTPS. (Fastify sends no X-Powered-By.)
 */
export default fp(async (app) => {
  await app.register(helmet, {
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'same-origin' }
  })
}, { name: 'security-headers' })
