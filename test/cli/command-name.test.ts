import assert from 'node:assert/strict'
import { test } from 'node:test'
import { commandName } from '../../src/cli/command-name.js'

test('hints name the command as it can be typed again from the folder it ran in: the bundle\'s path, or an installed binary\'s name', () => {
  assert.equal(commandName('/srv/petstore/dist/petstore.mjs', '/srv/petstore'), './dist/petstore.mjs')
  // From a folder of the clone, `petstore` named a command that is not installed (found by a probe).
  assert.equal(commandName('/srv/petstore/dist/petstore.mjs', '/srv/petstore/data'), '/srv/petstore/dist/petstore.mjs')
  assert.equal(commandName('/srv/petstore/dist/petstore.mjs', '/home/me'), '/srv/petstore/dist/petstore.mjs')
  assert.equal(commandName('/usr/local/bin/petstore', '/home/me'), 'petstore')
  assert.equal(commandName('/srv/app/node_modules/.bin/petstore', '/srv/app'), 'petstore')
})
