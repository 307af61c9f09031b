import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { ERROR_CATALOG } from '../../src/errors.js'
import { CONFIG_VARIABLES } from '../../src/config.js'

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

test('the README error table lists every error code with its status', () => {
  for (const [code, { status }] of Object.entries(ERROR_CATALOG)) {
    assert.ok(README.includes(`| ${status} | \`${code}\` |`), `README lacks the row of ${code} (${status})`)
  }
})

test('the README configuration table lists every setting', () => {
  assert.ok(CONFIG_VARIABLES.length >= 11)
  for (const name of CONFIG_VARIABLES) {
    assert.ok(README.includes(`| \`${name}\` |`), `README lacks the setting ${name}`)
  }
})
