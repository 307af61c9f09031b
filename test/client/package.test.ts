import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { promisify } from 'node:util'

// What a package of this clone holds goes wherever the tarball goes: only what running the service and
// using the client need, and the documents, never the sources, the tests or what lies in the clone (a
// `.env`, a store file).
const PACKED_ROOTS = /^(?:dist\/|docs\/|README\.md$|CHANGELOG\.md$|LICENSE$|package\.json$)/

test('the package holds the built service (the command and each of its chunks), its client and the documents, and nothing else of the clone', async () => {
  // --ignore-scripts: packing would otherwise build the package again (`prepare`), under the other tests' feet.
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { maxBuffer: 16 * 1024 * 1024 })
  const [{ files }] = JSON.parse(stdout) as [{ files: Array<{ path: string }> }]
  const paths = files.map(({ path }) => path)
  assert.deepEqual(paths.filter((path) => !PACKED_ROOTS.test(path) || path.endsWith('.map')), [], 'packed, and not to be')
  for (const needed of ['dist/petstore.mjs', 'dist/pet-writer.worker.js', 'dist/wal-checkpoint.worker.js', 'dist/client/index.js', 'dist/client/index.d.ts', 'README.md', 'LICENSE']) {
    assert.ok(paths.includes(needed), `${needed} is not packed (is the package built? npm ci builds it)`)
  }
  // The command's chunks (scripts/bundle.mjs), followed from its entry: each is packed, and no other, such as one of an earlier build.
  const loaded = new Set<string>()
  const follow = (file: string) => {
    for (const [, chunk] of readFileSync(file, 'utf8').matchAll(/["']\.\/(petstore-\w+\.mjs)["']/g)) {
      const path = `dist/${chunk!}`
      if (loaded.has(path)) continue
      loaded.add(path)
      follow(path)
    }
  }
  follow('dist/petstore.mjs')
  assert.ok(loaded.size > 0, 'the command is split into chunks')
  assert.deepEqual(paths.filter((path) => /^dist\/petstore-\w+\.mjs$/.test(path)).sort(), [...loaded].sort())
  // Of dist/, what runs (the command, its chunks, the workers' entry points) and the client, no other
  // of the compiler's files, which no export reaches; and no code names a map the package lacks.
  const distFiles = paths.filter((path) => path.startsWith('dist/'))
  assert.deepEqual(distFiles.filter((path) => !/^dist\/(?:petstore(?:-\w+)?\.mjs|[\w-]+\.worker\.js|client\/\w+\.(?:js|d\.ts))$/.test(path)), [])
  assert.deepEqual(distFiles.filter((path) => /\.m?js$/.test(path) && /^\/\/# sourceMappingURL=/m.test(readFileSync(path, 'utf8'))), [], 'names a map that is not packed')
})
