import { once } from 'node:events'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type * as Esbuild from 'esbuild'

// These threads allocate little at a time: a young generation of 2 MB (V8 would let it grow to that of
// the main thread) kept the service's peak RSS 4 MB lower under DURABILITY=strict.
const LIMITS = { maxYoungGenerationSizeMb: 2 }

/**
 * Starts the worker thread whose entry point is the module `name` beside `moduleUrl` (the caller's
 * `import.meta.url`). Built, that is `name.js` beside the module (dist/db/, dist/pets/) or beside
 * the bundle (dist/), which bundles each entry point apart. Run from TypeScript sources (tests, tsx),
 * it is `name.ts`, bundled into one script first (see bundledScript).
 */
export function startWorker (name: string, moduleUrl: string, workerData: unknown): Worker {
  if (!moduleUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, moduleUrl), { workerData, resourceLimits: LIMITS })
  return new Worker(bundledScript(fileURLToPath(new URL(`./${name}.ts`, moduleUrl))), { eval: true, workerData, resourceLimits: LIMITS })
}

const scripts = new Map<string, string>()

/**
 * The TypeScript entry point and what it imports as one CommonJS script, built by esbuild once per
 * process. A thread that registered tsx instead (on Node 20 a worker inherits no loader) compiled each
 * module on a loader thread of its own: a third of the test suite's CPU went to starting such threads.
 */
function bundledScript (entry: string): string {
  let script = scripts.get(entry)
  if (script === undefined) {
    const require = createRequire(import.meta.url)
    const { buildSync } = require('esbuild') as typeof Esbuild
    const { outputFiles } = buildSync({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', target: 'node20', write: false, external: ['better-sqlite3'], logLevel: 'warning' })
    // A script evaluated in a thread resolves packages from the working directory: resolve them from the entry's.
    script = `((require) => {\n${outputFiles[0]!.text}\n})(require('node:module').createRequire(${JSON.stringify(entry)}))`
    scripts.set(entry, script)
  }
  return script
}

/** Sends the thread its `stop` message and resolves once it has ended, keeping the process up till then. */
export async function stopWorker (worker: Worker, stop: unknown): Promise<void> {
  const exited = once(worker, 'exit')
  worker.ref()
  worker.postMessage(stop)
  await exited
}
