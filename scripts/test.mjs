// `npm test`: type-check and lint side by side, bundle the command, then every test file with node:test.
//
// The test files are bundled first by esbuild, one file each (their shared code in shared chunks), with
// the packages the service's bundle takes in, and the test-only ones left to Node. Run through tsx
// instead, each test process loaded its 1,400 modules through loader hooks on a thread of their own:
// 1.5 s of CPU per file, a third of the suite's time; with every package left to Node, finding and
// reading them was still half of a test file's start (0.4 s of its 1.3 s of CPU).
import { spawn } from 'node:child_process'
import { readdirSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { REQUIRE_BANNER, swaggerUiFolders, UNBUNDLED_PACKAGES } from './bundling.mjs'

const OUT = '.test-build'
// The PostgreSQL read cache's suite times a 100 ms bound: it runs last and alone, on cores of its own.
const ALONE = ['store/postgres-read-cache.test.ts']
const TEST_TIMEOUT_MS = 600_000

/** Runs a command, its output on ours; resolves with whether it succeeded. */
function succeeds (command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit' })
    child.on('error', reject)
    child.on('exit', (code) => resolve(code === 0))
  })
}

/**
 * Each module keeps the `import.meta.url` of its source: paths beside it (README.md, package.json)
 * and the worker threads started from TypeScript (see src/store/sqlite/worker-thread.ts) resolve as
 * they do under tsx.
 */
const keepImportMetaUrl = {
  name: 'keep-import-meta-url',
  setup (bundler) {
    bundler.onLoad({ filter: /\.ts$/ }, async ({ path }) => ({
      contents: (await readFile(path, 'utf8')).replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href)),
      loader: 'ts'
    }))
  }
}

const packageJson = JSON.parse(await readFile('package.json', 'utf8'))
const BUNDLED_PACKAGES = new Set(Object.keys(packageJson.dependencies).filter((name) => !UNBUNDLED_PACKAGES.includes(name)))

/**
 * Leaves to Node the packages the service's bundle leaves to it, and those only the tests use (some,
 * such as TypeScript, cannot be bundled as ES modules: they read `__filename`); the packages that these
 * bundled ones import are bundled with them.
 */
const bundleAsTheServiceDoes = {
  name: 'bundle-as-the-service-does',
  setup (bundler) {
    bundler.onResolve({ filter: /^[^./]/ }, ({ path, importer }) => {
      const name = path.split('/', path.startsWith('@') ? 2 : 1).join('/')
      const bundled = BUNDLED_PACKAGES.has(name) || (importer.includes('/node_modules/') && !UNBUNDLED_PACKAGES.includes(name) && !path.startsWith('node:'))
      return bundled ? undefined : { path, external: true }
    })
  }
}

async function main () {
  const checks = await Promise.all([succeeds('npm', ['run', 'typecheck']), succeeds('npm', ['run', 'lint']), succeeds(process.execPath, ['scripts/bundle.mjs'])])
  if (checks.includes(false)) return 1

  const files = readdirSync('test', { withFileTypes: true }).filter((entry) => entry.isDirectory())
    .flatMap(({ name }) => readdirSync(join('test', name)).filter((file) => file.endsWith('.test.ts')).map((file) => `${name}/${file}`))
  rmSync(OUT, { recursive: true, force: true })
  await build({
    entryPoints: files.map((file) => join('test', file)),
    outdir: OUT,
    outbase: 'test',
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'inline',
    // Node reads only the mappings: a test's stack trace names each frame's source file and line.
    sourcesContent: false,
    banner: REQUIRE_BANNER,
    plugins: [bundleAsTheServiceDoes, keepImportMetaUrl, swaggerUiFolders],
    logLevel: 'warning'
  })
  const built = (file) => join(OUT, file.replace(/\.ts$/, '.js'))
  // A test file that hangs fails after 10 minutes (Node 20 bounds each file, not each test; the whole
  // suite takes about 4) instead of holding CI to its end.
  const nodeTest = (concurrency, tests) => succeeds(process.execPath,
    ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, `--test-timeout=${TEST_TIMEOUT_MS}`, ...tests.map(built)])
  if (!await nodeTest(2, files.filter((file) => !ALONE.includes(file)))) return 1
  return await nodeTest(1, ALONE) ? 0 : 1
}

process.exitCode = await main()
