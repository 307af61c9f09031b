// What the service's bundle (scripts/bundle.mjs) and the test files' (scripts/test.mjs) share.

import { readFile } from 'node:fs/promises'
import { dirname, relative } from 'node:path'

/** The packages the service's bundle leaves to Node, each for a reason it needs at run time. */
export const UNBUNDLED_PACKAGES = [
  'better-sqlite3', // a native addon, found by path at run time
  'pg', // loaded only when DATABASE_URL is PostgreSQL
  'pino' // its transports run files of its package in worker threads
]

// A file of @fastify/swagger-ui's code, and its package's folder.
const SWAGGER_UI_FILE = /^(.*[\\/]@fastify[\\/]swagger-ui)[\\/].*\.js$/

/**
 * Bundles @fastify/swagger-ui, which serves the files of its own package folder (the page's scripts
 * and styles): each `__dirname` in its code becomes its file's folder in the package as installed,
 * found when it runs. Left to Node, it loaded its own copies of `yaml` and `@fastify/static`, file by
 * file: 51 ms of every `serve`'s start (71.4 against 76.5 ticks of CPU, twelve pairs).
 */
export const swaggerUiFolders = {
  name: 'swagger-ui-folders',
  setup (bundler) {
    bundler.onLoad({ filter: SWAGGER_UI_FILE }, async ({ path }) => {
      const [, packageRoot] = SWAGGER_UI_FILE.exec(path)
      const folder = JSON.stringify(relative(packageRoot, dirname(path)))
      const installedFolder = `require('node:path').join(require('node:path').dirname(require.resolve('@fastify/swagger-ui')), ${folder})`
      return { contents: (await readFile(path, 'utf8')).replaceAll('__dirname', installedFolder), loader: 'js' }
    })
  }
}

/** CommonJS dependencies inside an ES module still call require() for Node's built-ins. */
export const REQUIRE_BANNER = { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" }
