import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { test } from 'node:test'
import { onStopSignals } from '../../src/held-stop-signals.js'

/** Blocks the event loop, as the first signal's synchronous work does on a loaded machine. */
function block (ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/** Sends SIGTERM to this process from another one, which the kernel delivers while this one may be busy. */
async function killFromOutside (): Promise<void> {
  const kill = spawn('kill', ['-TERM', String(process.pid)])
  await once(kill, 'exit')
}

test('a copy of the first stop signal that comes while the first is handled is not a second signal, however long its handling takes', async (t) => {
  const handled: string[] = []
  const stopListening = onStopSignals(() => {
    handled.push('first')
    void killFromOutside()
    block(300) // the copy comes 1 to 10 ms in, and is handled only after this
  }, () => handled.push('second'))
  t.after(stopListening)
  let delivered = 0
  const count = () => { delivered++ }
  process.on('SIGTERM', count)
  t.after(() => process.off('SIGTERM', count))

  process.kill(process.pid, 'SIGTERM')
  while (delivered < 2) await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(handled, ['first'])
})

test('a stop signal that comes after the copies\' window is a second signal', async (t) => {
  const handled: string[] = []
  const stopListening = onStopSignals(() => handled.push('first'), () => handled.push('second'))
  t.after(stopListening)

  await killFromOutside()
  while (handled.length === 0) await new Promise((resolve) => setImmediate(resolve))
  await new Promise((resolve) => setTimeout(resolve, 150))
  await killFromOutside()
  while (handled.length === 1) await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(handled, ['first', 'second'])
})
