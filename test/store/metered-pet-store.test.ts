import assert from 'node:assert/strict'
import { test } from 'node:test'
import { HistogramTally } from '../../src/metrics/histogram-tally.js'
import { meteredPetStore } from '../../src/store/metered-pet-store.js'
import { createTestStore } from '../helper.js'

test('the metered store times each call under its outcome and hands on the store\'s result or error as it is', async (t) => {
  const { store } = await createTestStore(t)
  const duration = new HistogramTally(['operation', 'outcome'], [0.001, 1])
  const pets = meteredPetStore(store.pets, duration)

  const created = await pets.create({ pet: { name: 'Rex', categoryId: 1n, status: 'available' } })
  assert.equal(created.outcome, 'created')
  const id = created.outcome === 'created' ? created.pet.id : 0n
  assert.equal(await pets.findById(id), await store.pets.findById(id))
  assert.equal(duration.series('create', 'ok').count, 1)
  assert.ok(duration.series('create', 'ok').sum > 0)
  assert.equal(duration.series('findById', 'ok').count, 1)

  // A store that fails (here, closed): the caller gets the store's own error, counted as one.
  await store.close()
  const fromStore = await store.pets.findById(id).then(() => undefined, (error: unknown) => error)
  const fromMetered = await pets.findById(id).then(() => undefined, (error: unknown) => error)
  assert.ok(fromStore instanceof Error, 'a closed store fails')
  assert.ok(fromMetered instanceof Error)
  assert.equal(fromMetered.message, fromStore.message)
  assert.deepEqual([duration.series('findById', 'ok').count, duration.series('findById', 'error').count], [1, 1])
})
