import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'

test('defaults need no configuration', () => {
  assert.deepEqual({ ...loadConfig({}) }, { DATABASE_URL: 'sqlite:./data/petstore.db', DATABASE_POOL_SIZE: 10, DATABASE_CONNECT_TIMEOUT_MS: 2000, DATABASE_STATEMENT_TIMEOUT_MS: 5000, DURABILITY: 'default', PORT: 8080, HOST: '0.0.0.0', LOG_LEVEL: 'info', METRICS_HOST: '127.0.0.1', RATE_LIMIT_PER_MINUTE: 600, CONNECTIONS_PER_ADDRESS: 256 })
})

test('values are read and typed; empty means unset', () => {
  const config = loadConfig({ PORT: '9000', LOG_LEVEL: 'warn', HOST: '', PUBLIC_BASE_URL: 'https://pets.example.com/api/' })
  assert.equal(config.PORT, 9000)
  assert.equal(config.LOG_LEVEL, 'warn')
  assert.equal(config.HOST, '0.0.0.0')
  assert.equal(config.PUBLIC_BASE_URL, 'https://pets.example.com/api')
  assert.ok(Object.isFrozen(config))
})

test('an invalid value is a one-line error naming the variable', () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ PUBLIC_BASE_URL: 'pets.example.com' }, 'PUBLIC_BASE_URL'],
    [{ PUBLIC_BASE_URL: 'https://pets.example.com/v1' }, 'PUBLIC_BASE_URL']
  ]
  for (const [env, name] of cases) {
    assert.throws(() => loadConfig(env), (error: Error) => {
      assert.ok(error instanceof ConfigError)
      assert.ok(error.message.includes(name), error.message)
      assert.ok(!error.message.includes('\n'))
      return true
    })
  }
})
