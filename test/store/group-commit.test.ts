import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { GroupCommit } from '../../src/store/group-commit.js'

/** A commit that holds each group until the test lets it go, and records the groups and the most committing at once. */
function heldCommits () {
  const groups: number[][] = []
  const release: Array<(error?: Error) => void> = []
  let committing = 0
  let most = 0
  const commit = async (items: number[]) => {
    groups.push(items)
    most = Math.max(most, ++committing)
    const error = await new Promise<Error | undefined>((resolve) => { release.push(resolve) })
    committing--
    if (error !== undefined) throw error
    return items.map((item) => item * 10)
  }
  return { groups, release, commit, most: () => most }
}

test('items that arrive while a group commits wait in one group, and each gets its own result', async () => {
  const held = heldCommits()
  const commits = new GroupCommit(held.commit)
  const first = [1, 2, 3].map((item) => commits.add(item))
  await nextTurn()
  const second = [4, 5].map((item) => commits.add(item))
  await nextTurn()
  const third = [6, 7].map((item) => commits.add(item))
  await nextTurn()
  assert.deepEqual(held.groups, [[1, 2, 3]], 'one group at a time')
  held.release.shift()!()
  assert.deepEqual(await Promise.all(first), [10, 20, 30])
  await nextTurn()
  assert.deepEqual(held.groups, [[1, 2, 3], [4, 5, 6, 7]], 'the waiting items went in one group')
  held.release.shift()!()
  assert.deepEqual(await Promise.all([...second, ...third]), [40, 50, 60, 70])
  assert.equal(held.most(), 1)
})

/** Item 1 committing alone and item 2 waiting behind it; then the commit of item 1 fails with `error`. */
async function firstGroupFails (error: Error) {
  const held = heldCommits()
  const commits = new GroupCommit(held.commit)
  const first = commits.add(1)
  await nextTurn()
  const waiting = commits.add(2)
  held.release.shift()!(error)
  return { held, first, waiting }
}

test('a group that fails rejects its own items only; the next group commits', async () => {
  const { held, first, waiting } = await firstGroupFails(new Error('constraint'))
  await assert.rejects(first, /constraint/)
  await nextTurn()
  held.release.shift()!()
  assert.equal(await waiting, 20)
})

test('a group that fails because the store is unavailable fails those waiting too, rather than keep them past their deadline', async () => {
  const { held, first, waiting } = await firstGroupFails(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }))
  await assert.rejects(first, /refused/)
  await assert.rejects(waiting, /refused/)
  assert.deepEqual(held.groups, [[1]], 'no commit was tried for the waiting item')
})

test('pipelined, each group is handed on at the end of its turn, without waiting for the one before', async () => {
  const held = heldCommits()
  const commits = new GroupCommit(held.commit, { pipelined: true })
  const first = [1, 2].map((item) => commits.add(item))
  await nextTurn()
  const second = [3].map((item) => commits.add(item))
  await nextTurn()
  assert.deepEqual(held.groups, [[1, 2], [3]])
  assert.equal(held.most(), 2)
  held.release.shift()!()
  held.release.shift()!()
  assert.deepEqual(await Promise.all([...first, ...second]), [10, 20, 30])
})
