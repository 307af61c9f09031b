import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { ERROR_CATALOG } from '../../src/errors.js'
import { CONFIG_VARIABLES } from '../../src/config.js'
import { DEFAULT_VERIFIER_OPTIONS } from '../../src/api-keys/api-key.verifier.js'

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

const DOCS = ['README.md', ...readdirSync(new URL('../../docs/', import.meta.url)).map((name) => `docs/${name}`)]

test('every link in the README and docs/ stays in the repository and finds its file', () => {
  for (const doc of DOCS) {
    const text = readFileSync(new URL(`../../${doc}`, import.meta.url), 'utf8')
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)|<(https?:[^>]+)>/g)) {
      assert.ok(target !== undefined && !/^[a-z]+:/i.test(target), `${doc} links outside the repository: ${target}`)
      const file = target.split('#')[0]!
      if (file !== '') assert.ok(existsSync(new URL(file, new URL(`../../${doc}`, import.meta.url))), `${doc} links to a missing ${file}`)
    }
  }
})

test('the README, docs/ and the CLI give one delay for a revoked key: the key cache\'s', () => {
  const seconds = DEFAULT_VERIFIER_OPTIONS.cacheTtlMs / 1000
  let stated = 0
  for (const doc of DOCS) {
    const text = readFileSync(new URL(`../../${doc}`, import.meta.url), 'utf8')
    for (const [sentence] of text.matchAll(/[^.]*revoke[^.]*within \d+ s(econds)?/g)) {
      assert.match(sentence, new RegExp(`within ${seconds} seconds`), `${doc}: ${sentence}`)
      stated++
    }
  }
  assert.ok(stated >= 2, 'the README and docs/operations.md state the delay')
})

test('the README\'s client example compiles under exactOptionalPropertyTypes (what compiles with it compiles without)', (t) => {
  const example = /```ts\n(import \{ createClient[^]*?)```/.exec(README)?.[1]
  assert.ok(example !== undefined, 'README has the client example')
  const folder = mkdtempSync(join(tmpdir(), 'readme-example-'))
  t.after(() => { rmSync(folder, { recursive: true }) })
  const file = join(folder, 'example.mts')
  writeFileSync(file, example)
  const program = ts.createProgram([file], {
    strict: true, exactOptionalPropertyTypes: true, noEmit: true, skipLibCheck: true, types: ['node'],
    target: ts.ScriptTarget.ES2023, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    typeRoots: [fileURLToPath(new URL('../../node_modules/@types', import.meta.url))],
    paths: { 'petstore/client': [fileURLToPath(new URL('../../src/client/index.ts', import.meta.url))] }
  })
  // The example's own errors: the client's source is checked by the project's settings, in npm test's tsc.
  const errors = ts.getPreEmitDiagnostics(program, program.getSourceFile(file))
  assert.deepEqual(errors.map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')), [])
})
