import { Worker } from 'node:worker_threads'

/**
 * Starts the worker thread whose entry point is the module `name` beside `moduleUrl` (the caller's
 * `import.meta.url`). Built, that is `name.js` beside the module (dist/db/, dist/pets/) or beside
 * the bundle (dist/), which bundles each entry point apart. Run from TypeScript sources (tests, tsx),
 * it is `name.ts`, and the thread must first register tsx's loader itself: on Node 20 a worker
 * inherits no loader from its parent.
 */
export function startWorker (name: string, moduleUrl: string, workerData: unknown): Worker {
  if (!moduleUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, moduleUrl), { workerData })
  const entry = new URL(`./${name}.ts`, moduleUrl).href
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry)}) })`
  return new Worker(script, { eval: true, workerData })
}
