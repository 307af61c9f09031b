import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'

// What a package of this clone holds goes wherever the tarball goes: only what running the service and
// using the client need, and the documents, never the sources, the tests or what lies in the clone (a
// `.env`, a store file).
const PACKED_ROOTS = /^(?:dist\/|docs\/|README\.md$|CHANGELOG\.md$|package\.json$)/

test('the package holds the built service, its client and the documents, and nothing else of the clone', async () => {
  // --ignore-scripts: packing would otherwise build the package again (`prepare`), under the other tests' feet.
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { maxBuffer: 16 * 1024 * 1024 })
  const [{ files }] = JSON.parse(stdout) as [{ files: Array<{ path: string }> }]
  const paths = files.map(({ path }) => path)
  assert.deepEqual(paths.filter((path) => !PACKED_ROOTS.test(path) || path.endsWith('.map')), [], 'packed, and not to be')
  for (const needed of ['dist/petstore.mjs', 'dist/pet-writer.worker.js', 'dist/wal-checkpoint.worker.js', 'dist/client/index.js', 'dist/client/index.d.ts', 'README.md']) {
    assert.ok(paths.includes(needed), `${needed} is not packed (is the package built? npm ci builds it)`)
  }
})
