// What the service's bundle (scripts/bundle.mjs) and the test files' (scripts/test.mjs) share.

/** The packages the service's bundle leaves to Node, each for a reason it needs at run time. */
export const UNBUNDLED_PACKAGES = [
  'better-sqlite3', // a native addon, found by path at run time
  'pg', // loaded only when DATABASE_URL is PostgreSQL
  '@fastify/swagger-ui', // serves the files of its own package folder
  'pino' // its transports run files of its package in worker threads
]

/** CommonJS dependencies inside an ES module still call require() for Node's built-ins. */
export const REQUIRE_BANNER = { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" }
