import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formatRowRanges } from '../../src/cli/pets-import.js'

test('row ranges join rows next to each other in the file and skip the rows not meant', () => {
  assert.equal(formatRowRanges([2, 3, 4, 5, 9], [2, 3, 4, 5, 7, 9]), '2-5, 9')
  assert.equal(formatRowRanges([3, 5], [3, 4, 5]), '3, 5')
})

test('rows that start on one line (a JSON array on one line) are named once, by that line', () => {
  assert.equal(formatRowRanges([1, 1, 1], [1, 1, 1]), '1')
  assert.equal(formatRowRanges([1, 1, 2, 2], [1, 1, 2, 2, 3]), '1-2')
})
