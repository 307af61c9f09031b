import assert from 'node:assert/strict'
import { test } from 'node:test'
import { forEachStore } from '../helper.js'
import { runCli } from '../process.js'

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
    assert.match(header!, /^ID {2}NAME {5}KEY {6,}CREATED {2,}LAST USED {2,}STATUS$/, 'a plain, aligned table')
    assert.match(row!, new RegExp(`^1 {3}billing {2}ps_…${key.slice(-4)} {2,}\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z {2}never {5,}active$`))
    assert.equal(header!.indexOf('STATUS'), row!.indexOf('active'), 'columns line up')
    assert.deepEqual(rest, [])
    assert.ok(!table.stdout.includes(key))
  })

  test('keys revoke marks a key revoked; unknown ids fail with exit 1, bad ones with exit 2', async (t) => {
    const env = { DATABASE_URL: await store.databaseUrl(t) }
    await runCli(['keys', 'create', '--name', 'a'], env)
    const revoked = await runCli(['keys', 'revoke', '1'], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    const [key] = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout)
    assert.equal(key.revoked, true)

    const unknown = await runCli(['keys', 'revoke', '99'], env)
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /no API key with id 99/)
    assert.equal((await runCli(['keys', 'revoke', 'abc'], env)).code, 2)
    assert.equal((await runCli(['keys', 'create'], env)).code, 2, '--name is required')
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
