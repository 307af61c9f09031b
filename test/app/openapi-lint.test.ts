import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { build, tempDir } from '../helper.js'

// CI=true keeps Redocly from checking for updates and sending telemetry.
const REDOCLY_ENV = { ...process.env, CI: 'true', REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }

test('Redocly\'s recommended rules (and a Location on every 201) find nothing in the served document', async (t) => {
  const testApp = await build(t)
  const file = join(tempDir(t), 'openapi.json')
  writeFileSync(file, (await testApp.app.inject({ url: '/v1/openapi.json' })).body)
  const lint = await promisify(execFile)('node_modules/.bin/redocly', ['lint', file, '--config', 'redocly.yaml', '--format', 'json'], { env: REDOCLY_ENV })
    .catch((error: { stdout: string }) => error)
  const { problems } = JSON.parse(lint.stdout) as { problems: Array<{ ruleId: string, message: string }> }
  assert.deepEqual(problems.map(({ ruleId, message }) => `${ruleId}: ${message}`), [])
})
