import { once } from 'node:events'
import { Worker } from 'node:worker_threads'

// These threads allocate little at a time: a young generation of 2 MB (V8 would let it grow to that of
// the main thread) kept the service's peak RSS 4 MB lower under DURABILITY=strict.
const LIMITS = { maxYoungGenerationSizeMb: 2 }

/**
 * Starts the worker thread whose entry point is the module `name` beside `moduleUrl` (the caller's
 * `import.meta.url`). Built, that is `name.js` beside the module (dist/db/, dist/pets/) or beside
 * the bundle (dist/), which bundles each entry point apart. Run from TypeScript sources (tests, tsx),
 * it is `name.ts`, and the thread must first register tsx's loader itself: on Node 20 a worker
 * inherits no loader from its parent.
 */
export function startWorker (name: string, moduleUrl: string, workerData: unknown): Worker {
  if (!moduleUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, moduleUrl), { workerData, resourceLimits: LIMITS })
  const entry = new URL(`./${name}.ts`, moduleUrl).href
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry)}) })`
  return new Worker(script, { eval: true, workerData, resourceLimits: LIMITS })
}

/** Sends the thread its `stop` message and resolves once it has ended, keeping the process up till then. */
export async function stopWorker (worker: Worker, stop: unknown): Promise<void> {
  const exited = once(worker, 'exit')
  worker.ref()
  worker.postMessage(stop)
  await exited
}
