import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'

// In a process of its own: the failing work's error must reach the process as an uncaught exception,
// which the test runner would take for its own.
const FAILING_WORK = `
  import { atEndOfTurn } from ${JSON.stringify(new URL('../../src/end-of-turn.ts', import.meta.url).href)}
  process.on('uncaughtException', (error) => {
    console.log('uncaught: ' + error.message)
    setImmediate(() => { atEndOfTurn(() => { console.log('a later turn') }) })
  })
  atEndOfTurn(() => { console.log('first') })
  atEndOfTurn(() => { throw new Error('second failed') })
  atEndOfTurn(() => { console.log('third') })
  atEndOfTurn(() => { throw new Error('fourth failed') })
`

test('a work that throws at the end of a turn fails alone: the rest of the turn runs, and the first such error is uncaught', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', FAILING_WORK])
  assert.deepEqual(stdout.trim().split('\n'), ['first', 'third', 'uncaught: second failed', 'a later turn'])
})
