import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { keptTickEntries } from '../../src/next-tick-shape.js'

test('one entry of process.nextTick\'s queue is kept for the life of the process, its shape with it', () => {
  assert.equal(keptTickEntries.length, 1, 'async_hooks reported no TickObject: Node makes its entries otherwise now')
  const [entry] = keptTickEntries as Array<Record<string | symbol, unknown>>
  assert.equal(typeof entry!.callback, 'function')
  assert.equal(Object.getOwnPropertySymbols(entry).length, 2, 'its async id and trigger id, the keys whose shapes V8 forgot')
})

test('the command\'s entry imports it before anything else, so that it runs before any collection', () => {
  const main = readFileSync(new URL('../../src/cli/main.ts', import.meta.url), 'utf8')
  assert.equal(/^import .*$/m.exec(main)?.[0].replace(/\s*\/\/.*$/, ''), "import '../next-tick-shape.js'")
})
