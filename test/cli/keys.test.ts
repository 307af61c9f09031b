import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, existsSync, openSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { createKey, createTestStore, forEachStore, tempDir } from '../helper.js'
import { CLI, runCli } from '../process.js'

forEachStore((store) => {
  test('keys create works on a brand-new store and prints the key alone on its last line', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const created = await runCli(['keys', 'create', '--name', 'billing'], env)
    assert.equal(created.code, 0, created.stderr)
    const key = created.stdout.trimEnd().split('\n').at(-1)!
    assert.match(key, /^ps_[0-9A-Za-z]{38}$/)

    const listed = await runCli(['keys', 'list', '--json'], env)
    assert.equal(listed.code, 0, listed.stderr)
    const keys = JSON.parse(listed.stdout)
    assert.equal(keys.length, 1)
    assert.equal(keys[0].name, 'billing')
    assert.equal(typeof keys[0].id, 'number')
    assert.equal(keys[0].revoked, false)
    assert.equal(keys[0].hint, `ps_…${key.slice(-4)}`)
    assert.ok(!listed.stdout.includes(key), 'the whole key is never shown again')

    const table = await runCli(['keys', 'list'], env)
    const [header, row, ...rest] = table.stdout.trimEnd().split('\n')
    assert.match(header!, /^ID {2}NAME {5}KEY {6,}SCOPES {2}CREATED {2,}EXPIRES {2}LAST USED {2}ROTATED FROM {2}STATUS$/, 'a plain, aligned table')
    assert.match(row!, new RegExp(`^1 {3}billing {2}ps_…${key.slice(-4)} {2,}\\* {7}\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z {2}never {4}never {6}- {13}active$`))
    assert.equal(header!.indexOf('STATUS'), row!.indexOf('active'), 'columns line up')
    assert.deepEqual(rest, [])
    assert.ok(!table.stdout.includes(key))
  })

  test('keys list prints the control and bidirectional characters of a name stored before names were checked as escapes, so that it cannot forge the table', async (t) => {
    const { db, databaseUrl } = await createTestStore(t, store)
    await createKey(db, 'old\nname \u001b[31mred\u007f\u202etxt.exe')
    const table = await runCli(['keys', 'list'], { DATABASE_URL: databaseUrl })
    assert.equal(table.code, 0, table.stderr)
    const lines = table.stdout.trimEnd().split('\n')
    assert.equal(lines.length, 2, table.stdout)
    assert.match(lines[1]!, /^1 {3}old\\u000aname \\u001b\[31mred\\u007f\\u202etxt\.exe {2}ps_…/)
    assert.doesNotMatch(table.stdout, /[\p{Cc}\u202e](?<!\n)/u)
  })

  test('keys revoke marks a key revoked; unknown ids fail with exit 1, bad ones with exit 2', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    await runCli(['keys', 'create', '--name', 'a'], env)
    const revoked = await runCli(['keys', 'revoke', '1'], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.equal(revoked.stdout, 'Revoked API key 1.\n')
    const [key] = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout)
    assert.equal(key.revoked, true)
    // Again: nothing to do, and said so (it said "Revoked" again).
    const again = await runCli(['keys', 'revoke', '1'], env)
    assert.equal(again.code, 0, again.stderr)
    assert.equal(again.stdout, 'API key 1 was revoked already.\n')

    const unknown = await runCli(['keys', 'revoke', '99'], env)
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /no API key with id 99/)
    assert.equal((await runCli(['keys', 'revoke', 'abc'], env)).code, 2)
    assert.equal((await runCli(['keys', 'create'], env)).code, 2, '--name is required')
  })

  test('keys create takes scopes and a lifetime; keys rotate makes a replacement; keys list --json shows them all', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const created = await runCli(['keys', 'create', '--name', 'shop', '--scope', 'pets:read', '--scope', 'orders:write', '--expires-in', '90d'], env)
    assert.equal(created.code, 0, created.stderr)
    assert.match(created.stdout, /^Created API key 1 \(shop\) with the scopes orders:write pets:read, expiring at \d{4}-\d\d-\d\dT[\d:.]+Z\./m)
    const until = await runCli(['keys', 'create', '--name', 'until', '--expires-at', '2099-03-01T00:00:00Z', '--scope', '*:read'], env)
    assert.equal(until.code, 0, until.stderr)

    const rotated = await runCli(['keys', 'rotate', '1', '--overlap', '1h'], env)
    assert.equal(rotated.code, 0, rotated.stderr)
    assert.match(rotated.stdout, /^Rotated API key 1: key 3 replaces it, expiring at \d{4}-\d\d-\d\dT[\d:.]+Z, and key 1 stops working at \d{4}-\d\d-\d\dT[\d:.]+Z\./m)
    const newKey = rotated.stdout.trimEnd().split('\n').at(-1)!
    assert.match(newKey, /^ps_[0-9A-Za-z]{38}$/)

    const keys = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout)
    assert.deepEqual(keys.map((key: Record<string, unknown>) => Object.keys(key)), Array(3).fill(['id', 'name', 'hint', 'scopes', 'createdAt', 'expiresAt', 'lastUsedAt', 'rotatedFrom', 'expired', 'revoked', 'revokedAt']))
    const [shop, later, replacement] = keys
    assert.deepEqual(shop.scopes, ['orders:write', 'pets:read'])
    const overlapEnd = Date.parse(shop.expiresAt) - Date.now()
    assert.ok(overlapEnd > 3_500_000 && overlapEnd <= 3_600_000, `the old key expires when the overlap ends, in ${overlapEnd} ms`)
    assert.deepEqual([later.scopes, later.expiresAt, later.rotatedFrom], [['*:read'], '2099-03-01T00:00:00.000Z', null])
    assert.deepEqual([replacement.name, replacement.scopes, replacement.rotatedFrom, replacement.expired], ['shop', ['orders:write', 'pets:read'], 1, false])
    assert.equal(Date.parse(replacement.expiresAt) - Date.parse(replacement.createdAt), 90 * 86_400_000, 'the replacement lives as long as the key it replaces did')
    assert.equal(replacement.hint, `ps_…${newKey.slice(-4)}`)
  })

  test('keys rotate reads the lifetime asked for, else API_KEY_DEFAULT_TTL for a key that never expired; a key rotated already is refused', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    for (const name of ['shop', 'forever']) assert.equal((await runCli(['keys', 'create', '--name', name], env)).code, 0)
    const asked = await runCli(['keys', 'rotate', '1', '--expires-in', '1d'], env)
    assert.equal(asked.code, 0, asked.stderr)
    const fromDefault = await runCli(['keys', 'rotate', '2'], { ...env, API_KEY_DEFAULT_TTL: '30d' })
    assert.equal(fromDefault.code, 0, fromDefault.stderr)
    const [, , fromAsked, fromForever] = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout)
    assert.equal(Date.parse(fromAsked.expiresAt) - Date.parse(fromAsked.createdAt), 86_400_000, 'a lifetime asked for')
    assert.equal(Date.parse(fromForever.expiresAt) - Date.parse(fromForever.createdAt), 30 * 86_400_000, 'API_KEY_DEFAULT_TTL, for a key that never expired')
    const again = await runCli(['keys', 'rotate', '1'], env)
    assert.equal(again.code, 1)
    assert.equal(again.stderr, 'petstore: API key 1 was rotated already: key 3 replaces it; rotate that one\n')
  })

  test('keys rotate refuses an unknown key and a revoked one with exit 1', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const missing = await runCli(['keys', 'rotate', '9'], env)
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /no API key with id 9/)
    await runCli(['keys', 'create', '--name', 'gone'], env)
    await runCli(['keys', 'revoke', '1'], env)
    const revoked = await runCli(['keys', 'rotate', '1'], env)
    assert.equal(revoked.code, 1)
    assert.match(revoked.stderr, /API key 1 is revoked/)
  })

  test('a key lives exactly as long as asked from its creation: API_KEY_DEFAULT_TTL, --expires-in, rotate and its overlap', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t), API_KEY_DEFAULT_TTL: '30d' }
    const list = async () => JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as Array<{ createdAt: string, expiresAt: string }>
    const day = 86_400_000
    // Each expiry was once worked out before the store was opened, some 40 ms before the key was made.
    assert.equal((await runCli(['keys', 'create', '--name', 'a'], env)).code, 0)
    assert.equal((await runCli(['keys', 'create', '--name', 'b', '--expires-in', '90d'], env)).code, 0)
    assert.deepEqual((await list()).map((key) => Date.parse(key.expiresAt) - Date.parse(key.createdAt)), [30 * day, 90 * day])
    assert.equal((await runCli(['keys', 'rotate', '1', '--expires-in', '7d'], env)).code, 0)
    const [old, , replacement] = await list()
    assert.equal(Date.parse(replacement!.expiresAt) - Date.parse(replacement!.createdAt), 7 * day)
    assert.equal(Date.parse(old!.expiresAt) - Date.parse(replacement!.createdAt), day, 'the old key works for the overlap (24h) from the rotation')
    assert.equal((await runCli(['keys', 'list'], { ...env, API_KEY_DEFAULT_TTL: '30 days' })).code, 2, 'a malformed default is a configuration error')
  })

  test('migrate is idempotent', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    const first = await runCli(['migrate'], env)
    assert.equal(first.code, 0, first.stderr)
    assert.match(first.stdout, /Applied: 001/)
    const second = await runCli(['migrate'], env)
    assert.equal(second.code, 0)
    assert.match(second.stdout, /up to date/)
  })

  test('invalid configuration is a one-line error naming the variable, exit 2', async (t) => {
    const cases: Array<[string, string]> = [['PORT', 'abc'], ['DATABASE_URL', 'oracle://x'], ['LOG_LEVEL', 'chatty']]
    for (const [name, value] of cases) {
      const result = await runCli(['serve'], { DATABASE_URL: await store.databaseUrl(t), [name]: value })
      assert.equal(result.code, 2, `${name}: ${result.stderr}`)
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr)
      assert.match(result.stderr, new RegExp(name))
    }
  })
})

// Options are checked as the command line is read, before the store is opened: once, not once per store.
test('keys create and rotate refuse unknown scopes, malformed lifetimes and past dates with exit 2, before the store is opened', async (t) => {
  const path = join(tempDir(t), 'petstore.db')
  const env = { DATABASE_URL: `sqlite:${path}` }
  const cases: Array<[string[], RegExp]> = [
    [['keys', 'create', '--name', 'x', '--scope', 'pets:delete'], /unknown scope "pets:delete": the scopes are pets:read, pets:write, categories:read, categories:write, orders:read, orders:write, events:read, webhooks:read, webhooks:write, \*, \*:read/],
    [['keys', 'create', '--name', 'x', '--expires-in', '90 days'], /a duration is an integer from 1 to 999999 and one unit of s, m, h or d/],
    // Of the form, but too long: the message said only what the form is.
    [['keys', 'create', '--name', 'x', '--expires-in', '1000000d'], /a duration is an integer from 1 to 999999 and one unit/],
    [['keys', 'create', '--name', 'x', '--expires-at', '2020-01-01T00:00:00Z'], /--expires-at 2020-01-01T00:00:00.000Z is already past/],
    [['keys', 'create', '--name', 'x', '--expires-at', 'tomorrow'], /RFC 3339/],
    [['keys', 'create', '--name', 'x', '--expires-in', '1d', '--expires-at', '2099-01-01T00:00:00Z'], /not both/],
    [['keys', 'rotate', '1', '--overlap', '-1h'], /a duration is an integer/],
    [['keys', 'rotate', '1', '--overlap', '30s'], /an overlap is at least 1m/],
    [['keys', 'create', '--name', 'x', '--expires-at', '2099-02-30T00:00:00Z'], /RFC 3339/],
    [['keys', 'create', '--name', 'x', '--expires-at', '2099-13-01T00:00:00Z'], /RFC 3339/],
    [['keys', 'create', '--name', 'x', '--expires-at', '2099-00-10T00:00:00Z'], /RFC 3339/],
    [['keys', 'create', '--name', 'x', '--expires-at', '2099-01-32T00:00:00Z'], /RFC 3339/],
    // An offset past 23:59 was "Invalid time value", exit 1.
    [['keys', 'create', '--name', 'x', '--expires-at', '2099-01-01T00:00:00+25:00'], /RFC 3339/],
    [['keys', 'rotate', '1', '--expires-at', '2099-01-01T00:00:00+23:60'], /RFC 3339/],
    [['keys', 'rotate', '9223372036854775808'], /an API key id is an integer from 1 to 9223372036854775807/],
    [['keys', 'rotate', '0'], /an API key id is an integer from 1/],
    [['keys', 'revoke', '000'], /an API key id is an integer from 1/],
    // A name is printed by keys list: a line break or a terminal escape in it would forge the table.
    [['keys', 'create', '--name', ' '], /a key name is 1 to 100 characters of UTF-8, without control or direction characters/],
    [['keys', 'create', '--name', 'x'.repeat(101)], /a key name is 1 to 100 characters/],
    [['keys', 'create', '--name', 'billing\nservice'], /without control or direction characters/],
    [['keys', 'create', '--name', 'red \u001b[31mkey'], /without control or direction characters/],
    // A direction override shows the rest of the row reversed; U+FFFD stands for bytes that were not UTF-8.
    [['keys', 'create', '--name', 'admin \u202eyek'], /without control or direction characters/],
    [['keys', 'create', '--name', 'admin \u200f1'], /without control or direction characters/],
    [['keys', 'create', '--name', 'caf\ufffd'], /characters of UTF-8/]
  ]
  for (const [args, message] of cases) {
    const result = await runCli(args, env)
    assert.equal(result.code, 2, args.join(' '))
    assert.match(result.stderr, message, args.join(' '))
    // What was typed is quoted back, its escape sequences shown rather than run by the terminal.
    assert.ok(!result.stderr.includes('\u001b'), args.join(' '))
  }
  assert.equal(existsSync(path), false, 'no store was made')
})

/** Runs `command` with its standard output sent to `stdout`: its exit code and what it wrote on stderr. */
async function runWithStdout (command: string[], env: NodeJS.ProcessEnv, stdout: number | 'ignore'): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', stdout, 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (chunk) => { stderr += chunk })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stderr }
}

test('a key that cannot be printed (stdout on a full disk) is a failure said on stderr, not exit 0 with nothing printed', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const full = openSync('/dev/full', 'w')
  const { code, stderr } = await runWithStdout([process.execPath, ...CLI, 'keys', 'create', '--name', 'lost'], { ...process.env, DATABASE_URL: databaseUrl }, full)
  closeSync(full)
  assert.equal(code, 1)
  assert.match(stderr, /^petstore: the standard output cannot be written \(ENOSPC\): what this command printed is lost .*keys list/)
})

test('keys create and rotate with the standard output on /dev/null, or closed, are refused (exit 2): the key would be shown to no one', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const env = { ...process.env, DATABASE_URL: databaseUrl }
  const made = await runCli(['keys', 'create', '--name', 'seen'], env)
  assert.equal(made.code, 0, made.stderr)
  const node = [process.execPath, ...CLI].map((word) => `'${word}'`).join(' ')
  const commands = [
    [process.execPath, ...CLI, 'keys', 'create', '--name', 'unseen'],
    [process.execPath, ...CLI, 'keys', 'rotate', '1'],
    ['sh', '-c', `exec ${node} keys create --name unseen >&-`]
  ]
  for (const command of commands) {
    // Node gives a child its `ignore` as /dev/null, and so it does itself for a descriptor closed at start.
    const { code, stderr } = await runWithStdout(command, env, 'ignore')
    assert.equal(code, 2, command.join(' '))
    assert.match(stderr, /^petstore: the standard output is \/dev\/null \(or was closed\): the new key would be shown to no one; nothing was made\n$/, command.join(' '))
  }
  const keys = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout)
  assert.deepEqual(keys.map((key: { name: string, expiresAt: string | null }) => [key.name, key.expiresAt]), [['seen', null]], 'no key made, none rotated')
})

test('keys create, rotate and revoke and pets import on sqlite::memory:, a store that reaches no service, are refused (exit 2), not told the key is not there; an import --dry-run, which stores nothing, runs', async (t) => {
  const env = { DATABASE_URL: 'sqlite::memory:' }
  for (const command of [['create', '--name', 'lost'], ['rotate', '1'], ['revoke', '1']]) {
    const changed = await runCli(['keys', ...command], env)
    assert.equal(changed.code, 2, command.join(' '))
    assert.match(changed.stderr, /^petstore: DATABASE_URL is sqlite::memory:, a throw-away store .*would reach no service/, command.join(' '))
    assert.doesNotMatch(changed.stdout, /ps_/)
  }
  const pets = join(tempDir(t), 'pets.json')
  writeFileSync(pets, '[{"name":"Rex","categoryId":1}]')
  const imported = await runCli(['pets', 'import', pets], env)
  assert.equal(imported.code, 2, imported.stdout)
  assert.match(imported.stderr, /would reach no service/)
  const checked = await runCli(['pets', 'import', pets, '--dry-run'], env)
  assert.equal(checked.code, 0, checked.stderr)
})
