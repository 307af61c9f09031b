import { createHook } from 'node:async_hooks'

/**
 * One entry of process.nextTick's queue, kept for the life of the process so that V8 keeps the
 * shapes of those entries. Node makes each with an object literal whose first keys are symbols, and
 * V8 remembers the shapes that literal makes only weakly: a full garbage collection while no entry is
 * alive (the service's heap brings them) drops them, the literal's feedback turns generic for good,
 * and from then on every nextTick (Node's HTTP server makes several a request) adds those keys
 * through V8's runtime. A bare node:http server made to collect in full did the same; with one entry
 * kept, neither does. Imported first by the command's entry (src/cli/main.ts), before anything can collect.
 */
export const keptTickEntries: object[] = []

const hook = createHook({
  init (_asyncId, type, _triggerAsyncId, resource) {
    if (type === 'TickObject' && keptTickEntries.length === 0) keptTickEntries.push(resource)
  }
}).enable()
process.nextTick(() => {})
hook.disable()
