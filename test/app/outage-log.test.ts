import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import { createLogger } from '../../src/logger.js'
import { OutageLog } from '../../src/outage-log.js'

test('an outage is logged as its first failure per kind, counts per interval, then a recovery after a whole quiet interval', (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] })
  const lines: Array<{ level: number, kind: string, failures?: number, err?: { message: string } }> = []
  const outageLog = new OutageLog(createLogger('info', 'json', new Writable({ write: (line, _encoding, done) => { lines.push(JSON.parse(String(line))); done() } })), 'answering 503', 1000)
  const seen = () => lines.splice(0).map(({ level, kind, failures, err }) => ({ level, kind, failures, cause: err?.message }))

  outageLog.failed('store', new Error('ECONNREFUSED'))
  for (let i = 0; i < 5; i++) outageLog.failed('store', new Error('ECONNREFUSED'))
  t.mock.timers.tick(900)
  outageLog.failed('overload', new Error('lag'))
  assert.deepEqual(seen(), [
    { level: 50, kind: 'store', failures: undefined, cause: 'ECONNREFUSED' },
    { level: 50, kind: 'overload', failures: undefined, cause: 'lag' }
  ])
  t.mock.timers.tick(100)
  assert.deepEqual(seen(), [{ level: 40, kind: 'store', failures: 5, cause: undefined }], 'overload was watched 0.1 s only: not recovered')
  t.mock.timers.tick(1000)
  assert.deepEqual(seen().map(({ level, kind }) => ({ level, kind })), [{ level: 30, kind: 'store' }, { level: 30, kind: 'overload' }])
  t.mock.timers.tick(5000)
  assert.deepEqual(seen(), [], 'nothing more once recovered')
  outageLog.failed('store', new Error('again'))
  outageLog.failed('store', new Error('again'))
  outageLog.close()
  assert.deepEqual(seen().map(({ level, failures }) => ({ level, failures })), [{ level: 50, failures: undefined }, { level: 40, failures: 1 }], 'counts are reported at close')
})
