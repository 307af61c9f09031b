import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { generateApiKey } from '../../src/api-keys/api-key.service.js'
import { tempDir } from '../helper.js'
import { BUNDLE, CLI, runCli } from '../process.js'

test('petstore --help lists every command, with examples and exit codes', async () => {
  const { code, stdout } = await runCli(['--help'], {})
  assert.equal(code, 0)
  for (const command of ['serve', 'migrate', 'keys', 'pets']) assert.match(stdout, new RegExp(`^  ${command} `, 'm'))
  // The command names itself as it was run: the bundle in the clone, or `petstore` from the sources.
  assert.match(stdout, /Examples:\n {2}\$ (petstore|\.\/dist\/petstore\.mjs) serve/)
  assert.match(stdout, /Exit codes: 0 done, 1 the command failed, 2 bad configuration or usage\./)
})

test('each command has --help with its options and an example', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['serve', '--help'], /Usage: petstore serve/],
    [['migrate', '--help'], /Usage: petstore migrate/],
    [['keys', '--help'], /create \[options\][\s\S]*list \[options\][\s\S]*revoke <id>/],
    [['keys', 'create', '--help'], /--name <name>/],
    [['keys', 'list', '--help'], /--json/],
    [['keys', 'revoke', '--help'], /<id>/],
    [['pets', '--help'], /import \[options\] <file>/],
    [['pets', 'import', '--help'], /--format <format>[\s\S]*--batch-size <rows>[\s\S]*--dry-run[\s\S]*Exit codes: 0 every row stored/]
  ]
  for (const [args, expected] of cases) {
    const { code, stdout } = await runCli(args, {})
    assert.equal(code, 0, args.join(' '))
    assert.match(stdout, expected, args.join(' '))
    assert.match(stdout, /Examples:\n {2}\$ /, args.join(' '))
  }
})

test('petstore --version prints the package version, and the commit the command was built from', async () => {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  // Run from the sources (see CLI), the command knows no commit.
  const commit = CLI[0] === BUNDLE ? (await promisify(execFile)('git', ['rev-parse', '--short=12', 'HEAD'])).stdout.trim() : undefined
  const expected = commit === undefined ? [version] : [`${version}+${commit}`, `${version}+${commit}.dirty`]
  for (const flag of ['--version', '-V']) {
    const { code, stdout } = await runCli([flag], {})
    assert.equal(code, 0, flag)
    assert.ok(expected.includes(stdout.trim()), `${flag}: ${stdout.trim()}, not one of ${expected.join(', ')}`)
  }
})

test('a usage error is exit 2, a line that says what is wrong and one that points to --help', async () => {
  const unknown = await runCli(['feed-the-cat'], {})
  assert.equal(unknown.code, 2)
  assert.equal(unknown.stderr, "error: unknown command 'feed-the-cat'\n(add --help to see the usage)\n")
  const missing = await runCli(['keys', 'create'], {})
  assert.equal(missing.code, 2)
  assert.equal(missing.stderr, "error: required option '--name <name>' not specified\n(add --help to see the usage)\n")
  // A value with a line break is quoted on the error's one line; commander's own suggestion keeps its line.
  const broken = await runCli(['keys', 'revoke', '1\n2'], {})
  assert.equal(broken.code, 2)
  assert.equal(broken.stderr, "error: command-argument value '1\\u000a2' is invalid for argument 'id'. an API key id is an integer from 1 to 9223372036854775807 (see `keys list`)\n(add --help to see the usage)\n")
  // The key itself where its id goes: not printed back.
  const key = await runCli(['keys', 'revoke', generateApiKey().key], {})
  assert.equal(key.code, 2)
  assert.equal(key.stderr, "error: command-argument value 'ps_[redacted]' is invalid for argument 'id'. an API key id is an integer from 1 to 9223372036854775807 (see `keys list`)\n(add --help to see the usage)\n")
  const typo = await runCli(['kyes'], {})
  assert.equal(typo.stderr, "error: unknown command 'kyes'\n(Did you mean keys?)\n(add --help to see the usage)\n")
})

test('the built command names itself as it can be typed again: ./dist/petstore.mjs in the clone, its whole path elsewhere, petstore through a link of that name', async (t) => {
  const root = fileURLToPath(new URL('../..', import.meta.url))
  const bin = `${root}dist/petstore.mjs`
  const inClone = await promisify(execFile)(bin, ['--help'], { cwd: root })
  assert.match(inClone.stdout, /Examples:\n {2}\$ \.\/dist\/petstore\.mjs serve/)
  // From a folder of the clone, `petstore` named a command that is not installed (found by a probe).
  const folder = tempDir(t)
  for (const cwd of [`${root}test`, folder]) {
    const elsewhere = await promisify(execFile)(bin, ['--help'], { cwd })
    assert.ok(elsewhere.stdout.includes(`Examples:\n  $ ${bin} serve`), elsewhere.stdout)
  }
  // A path the shell would split is quoted.
  mkdirSync(join(folder, "pet's store"))
  symlinkSync(bin, join(folder, "pet's store", 'petstore.mjs'))
  const quoted = await promisify(execFile)(join(folder, "pet's store", 'petstore.mjs'), ['--help'], { cwd: root })
  assert.ok(quoted.stdout.includes(`Examples:\n  $ '${folder}/pet'\\''s store/petstore.mjs' serve`), quoted.stdout)
  // As npm installs it: a link named petstore, on the PATH.
  symlinkSync(bin, join(folder, 'petstore'))
  const installed = await promisify(execFile)(join(folder, 'petstore'), ['--help'], { cwd: folder })
  assert.match(installed.stdout, /Examples:\n {2}\$ petstore serve/)
})
