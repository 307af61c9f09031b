// Bundles the `petstore` command (and so the service) into dist/petstore.mjs, which `npm start` and
// the `petstore` bin run, and a few chunks beside it (dist/petstore-*.mjs). Loaded as hundreds of
// separate ES modules (TypeBox and Kysely alone are over a thousand files), the service spent most of
// its start-up finding, reading and compiling them: a bundle starts it in about two thirds of the time.
// The HTTP stack, which only `serve` imports, is a chunk of its own: in one file, every command read
// and compiled all 4 MB of it, and `keys list` took 0.42 s instead of 0.32. Each worker thread's entry
// point is bundled apart, beside it (see src/store/sqlite/worker-thread.ts).
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { REQUIRE_BANNER, swaggerUiFolders, UNBUNDLED_PACKAGES } from './bundling.mjs'

/**
 * The commit checked out, `.dirty` after it when tracked files differ from it; none outside a clone
 * of this project (a folder inside another project's clone is not one).
 */
function commitBuilt () {
  const root = realpathSync(fileURLToPath(new URL('..', import.meta.url)))
  const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  try {
    if (realpathSync(git('rev-parse', '--show-toplevel')) !== root) return undefined
    const commit = git('rev-parse', '--short=12', 'HEAD')
    return git('status', '--porcelain', '--untracked-files=no') === '' ? commit : `${commit}.dirty`
  } catch {
    return undefined
  }
}

const commit = commitBuilt()

const options = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Beside the bundle in a clone, for a debugger to be given; not named in it: the package ships no
  // sources, and a map named but missing is a warning in every tool that follows the name.
  sourcemap: 'external',
  logLevel: 'warning',
  // The version the command prints (src/version.ts).
  define: commit === undefined ? {} : { PETSTORE_COMMIT: JSON.stringify(commit) },
  banner: REQUIRE_BANNER,
  external: UNBUNDLED_PACKAGES,
  plugins: [swaggerUiFolders]
}
// Chunks are named by their content: those of an earlier build would otherwise stay, and be packed.
for (const name of existsSync('dist') ? readdirSync('dist') : []) {
  if (/^petstore-\w+\.mjs(\.map)?$/.test(name)) rmSync(`dist/${name}`)
}
await Promise.all([
  // In dist/ itself, as the entry is: code that finds files from its own module's URL (the worker
  // threads' entry points) finds them from any chunk.
  build({ ...options, entryPoints: { petstore: 'src/cli/main.ts' }, outdir: 'dist', splitting: true, outExtension: { '.js': '.mjs' }, chunkNames: 'petstore-[hash]' }),
  build({ ...options, entryPoints: ['src/store/sqlite/pet-writer.worker.ts'], outfile: 'dist/pet-writer.worker.js' }),
  build({ ...options, entryPoints: ['src/store/sqlite/wal-checkpoint.worker.ts'], outfile: 'dist/wal-checkpoint.worker.js' })
])
