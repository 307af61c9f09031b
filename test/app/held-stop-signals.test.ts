import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { onStopSignals } from '../../src/held-stop-signals.js'
import { waitFor } from '../helper.js'

/** Blocks the event loop, as the first signal's synchronous work does on a loaded machine. */
function block (ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/** Sends SIGTERM to this process from another one, which the kernel delivers while this one may be busy. */
async function killFromOutside (): Promise<void> {
  await promisify(execFile)('kill', ['-TERM', String(process.pid)])
}

test('a copy of the first stop signal that comes while the first is handled is not a second signal, however long its handling takes', async (t) => {
  const handled: string[] = []
  let copySent: Promise<void> | undefined
  const stopListening = onStopSignals(() => {
    handled.push('first')
    copySent = killFromOutside()
    block(300) // the copy comes 1 to 10 ms in, and is handled only after this
  }, () => handled.push('second'))
  t.after(stopListening)
  let delivered = 0
  const count = () => { delivered++ }
  process.on('SIGTERM', count)
  t.after(() => process.off('SIGTERM', count))

  process.kill(process.pid, 'SIGTERM')
  await waitFor(() => copySent !== undefined, () => 'the first signal handled')
  await copySent
  await waitFor(() => delivered === 2, () => `${delivered} of the 2 signals delivered`)
  assert.deepEqual(handled, ['first'])
})

test('a stop signal that comes after the copies\' window is a second signal', async (t) => {
  const handled: string[] = []
  const stopListening = onStopSignals(() => handled.push('first'), () => handled.push('second'))
  t.after(stopListening)

  await killFromOutside()
  await waitFor(() => handled.length === 1, () => `handled: ${handled.join(', ')}`)
  await new Promise((resolve) => setTimeout(resolve, 150))
  await killFromOutside()
  await waitFor(() => handled.length === 2, () => `handled: ${handled.join(', ')}`)
  assert.deepEqual(handled, ['first', 'second'])
})
