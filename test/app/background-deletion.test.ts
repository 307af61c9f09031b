import assert from 'node:assert/strict'
import { test } from 'node:test'
import { deleteInBatches } from '../../src/background-deletion.js'

test('deleteInBatches runs batches until one comes back short, and tells each as it commits', async () => {
  const batches = [1000, 1000, 3]
  const heard: number[] = []
  assert.equal(await deleteInBatches(async () => batches.shift()!, 1000, (count) => heard.push(count)), 2003)
  assert.deepEqual(heard, [1000, 1000, 3])
})

test('a run that fails part way has told the batches it deleted before the failure', async () => {
  const heard: number[] = []
  let calls = 0
  const failing = async () => {
    if (++calls === 3) throw new Error('the store is down')
    return 1000
  }
  await assert.rejects(deleteInBatches(failing, 1000, (count) => heard.push(count)), /the store is down/)
  assert.deepEqual(heard, [1000, 1000], 'the two batches committed are counted')
})
