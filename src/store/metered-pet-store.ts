import type { HistogramTally } from '../metrics/histogram-tally.js'
import type { PetStore } from './pet-store.js'

/**
 * The same pet store, each call timed into `duration` (labels: operation, outcome): metrics observe
 * the store through its interface and never change the path a request takes.
 */
export function meteredPetStore (pets: PetStore, duration: HistogramTally): PetStore {
  // The caller gets the store's own promise, timed by a reaction beside its own: a promise chained to
  // it, or an async function awaiting it, made every call wait another turn of the microtask queue
  // (docs/benchmarks.md). The store's calls are async: none throws synchronously. The reaction takes
  // the failure too, so it leaves no unhandled rejection of its own; the caller still gets it.
  const timed = <Arg, Result>(operation: keyof PetStore, call: (arg: Arg) => Promise<Result>) => {
    const ok = duration.series(operation, 'ok')
    const failed = duration.series(operation, 'error')
    return (arg: Arg): Promise<Result> => {
      const started = performance.now()
      const result = call(arg)
      void result.then(() => { ok.observe((performance.now() - started) / 1000) }, () => { failed.observe((performance.now() - started) / 1000) })
      return result
    }
  }
  return {
    findPage: timed('findPage', pets.findPage.bind(pets)),
    findById: timed('findById', pets.findById.bind(pets)),
    create: timed('create', pets.create.bind(pets)),
    insertMany: timed('insertMany', pets.insertMany.bind(pets)),
    refreshStatistics: timed<void, void>('refreshStatistics', pets.refreshStatistics.bind(pets))
  }
}
