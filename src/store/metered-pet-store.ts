import type { HistogramTally } from '../metrics/histogram-tally.js'
import type { PetStore } from './pet-store.js'

/**
 * The same pet store, each call timed into `duration` (labels: operation, outcome): metrics observe
 * the store through its interface and never change the path a request takes.
 */
export function meteredPetStore (pets: PetStore, duration: HistogramTally): PetStore {
  const timed = <Args extends unknown[], Result>(operation: keyof PetStore, call: (...args: Args) => Promise<Result>) => {
    const ok = duration.series(operation, 'ok')
    const failed = duration.series(operation, 'error')
    return async (...args: Args): Promise<Result> => {
      const started = performance.now()
      try {
        const result = await call(...args)
        ok.observe((performance.now() - started) / 1000)
        return result
      } catch (error) {
        failed.observe((performance.now() - started) / 1000)
        throw error
      }
    }
  }
  return {
    findPage: timed('findPage', (filter) => pets.findPage(filter)),
    findById: timed('findById', (id) => pets.findById(id)),
    create: timed('create', (request) => pets.create(request)),
    insertMany: timed('insertMany', (values) => pets.insertMany(values)),
    refreshStatistics: timed('refreshStatistics', () => pets.refreshStatistics())
  }
}
