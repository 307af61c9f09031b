import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'

test('defaults need no configuration', () => {
  assert.deepEqual({ ...loadConfig({}) }, { DATABASE_URL: 'sqlite:./data/petstore.db', DATABASE_POOL_SIZE: 10, DATABASE_CONNECT_TIMEOUT_MS: 2000, DATABASE_STATEMENT_TIMEOUT_MS: 5000, DURABILITY: 'default', PORT: 8080, SHUTDOWN_GRACE_MS: 10_000, WEB_CONCURRENCY: 1, HOST: '0.0.0.0', LOG_LEVEL: 'info', LOG_FORMAT: 'auto', LOG_REQUESTS: 'auto', METRICS_HOST: '127.0.0.1', RATE_LIMIT_PER_MINUTE: 600, CONNECTIONS_PER_ADDRESS: 256, MAX_STREAMS_PER_KEY: 5, EVENT_RETENTION_DAYS: 30, WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_RETRY_SCHEDULE: '5s,5m,30m,2h,5h,10h,14h,20h,20h', REDIS_TIMEOUT_MS: 100 })
})

test('values are read and typed; empty means unset', () => {
  const config = loadConfig({ PORT: '9000', LOG_LEVEL: 'warn', HOST: '', PUBLIC_BASE_URL: 'https://pets.example.com/api/' })
  assert.equal(config.PORT, 9000)
  assert.equal(config.LOG_LEVEL, 'warn')
  assert.equal(config.HOST, '0.0.0.0')
  assert.equal(config.PUBLIC_BASE_URL, 'https://pets.example.com/api')
  assert.ok(Object.isFrozen(config))
})

/** The refusal of a PostgreSQL URL's parameter that pg does not read. */
function notRead (parameter: string): string {
  return `its parameter "${parameter}" is not read by pg, the service's PostgreSQL driver, and would be ignored without a word: remove it (the parameters read are host, port, ` +
    'user, password, options, application_name, fallback_application_name, ssl, sslmode, sslcert, sslkey, sslrootcert, sslnegotiation, uselibpqcompat, statement_timeout, ' +
    'lock_timeout, idle_in_transaction_session_timeout)'
}

test('a configuration error names the variable, the value received and what is allowed, never a password', () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ LOG_LEVEL: 'loud' }, 'Invalid configuration: LOG_LEVEL is "loud"; it must be one of fatal, error, warn, info, debug, trace, silent'],
    [{ PORT: '70000' }, 'Invalid configuration: PORT is "70000"; it must be an integer from 0 to 65535'],
    [{ SHUTDOWN_GRACE_MS: '0' }, 'Invalid configuration: SHUTDOWN_GRACE_MS is "0"; it must be an integer from 1 to 3600000'],
    [{ RATE_LIMIT_PER_MINUTE: '-1' }, 'Invalid configuration: RATE_LIMIT_PER_MINUTE is "-1"; it must be an integer from 0 to 999999999999999'],
    // Taken, it made the RateLimit headers' q and r "1e+23", which no structured-field parser reads.
    [{ RATE_LIMIT_PER_MINUTE: '99999999999999999999999' }, 'Invalid configuration: RATE_LIMIT_PER_MINUTE is "99999999999999999999999"; it must be an integer from 0 to 999999999999999'],
    // Of 400 digits, it was taken as Infinity.
    [{ CONNECTIONS_PER_ADDRESS: '9'.repeat(400) }, `Invalid configuration: CONNECTIONS_PER_ADDRESS is "${'9'.repeat(400)}"; it must be an integer from 1 to 1000000`],
    // Of the form its message gave, but past its limits: the message said only the form.
    [{ WEBHOOK_RETRY_SCHEDULE: '1000000d' }, 'Invalid configuration: WEBHOOK_RETRY_SCHEDULE is "1000000d"; it must be ' +
    '1 to 20 waits, comma-separated, each an integer from 1 to 999999 and one unit of ms, s, m, h or d, such as 5s,5m,30m,2h'],
    [{ DATABASE_URL: 'postgress://app:s3cret@db:5432/pets' }, 'Invalid configuration: DATABASE_URL is "postgress://app:***@db:5432/pets"; ' +
    'it must be of the form sqlite:PATH or sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB'],
    [{ DATABASE_URL: 'postgress://app:p/ss@w@rd@db/pets' }, 'Invalid configuration: DATABASE_URL is "postgress://app:***@db/pets"; ' +
    'it must be of the form sqlite:PATH or sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB'],
    [{ REDIS_URL: 'localhost:6379' }, 'Invalid configuration: REDIS_URL is "localhost:6379"; it must be of the form redis://HOST:PORT or rediss://HOST:PORT'],
    // Of the form, but no URL: it once passed, to fail as "Migration failed: Invalid URL" with exit 1.
    [{ DATABASE_URL: 'postgres://app:s3cret@db:99999/pets' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db:99999/pets"; ' +
    'it must be of the form sqlite:PATH or sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB: a URL (its port a number up to 65535)'],
    // Taken, it was the user's database (postgres), which `keys list` migrated.
    [{ DATABASE_URL: 'postgres://app:s3cret@db:5432' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db:5432"; it names no database: add /DB after the host and port (or set PGDATABASE)'],
    [{ DATABASE_DIRECT_URL: 'postgres://app:s3cret@db/?sslmode=require' }, 'Invalid configuration: DATABASE_DIRECT_URL is "postgres://app:***@db/?sslmode=require"; it names no database: add /DB after the host and port (or set PGDATABASE)'],
    // libpq's, which pg reads from no URL: it was ignored, whatever its value.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?connect_timeout=abc' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets?connect_timeout=abc"; ' +
    'its connect_timeout is not read: the wait for a connection is DATABASE_CONNECT_TIMEOUT_MS (2000 ms): remove connect_timeout, and set that instead'],
    [{ DATABASE_URL: 'postgres://app:s3cret@pooler/pets', DATABASE_DIRECT_URL: 'postgres://app:s3cret@db/pets?sslmode=require&connect_timeout=10', DATABASE_CONNECT_TIMEOUT_MS: '500' },
      'Invalid configuration: DATABASE_DIRECT_URL is "postgres://app:***@db/pets?sslmode=require&connect_timeout=10"; ' +
      'its connect_timeout is not read: the wait for a connection is DATABASE_CONNECT_TIMEOUT_MS (500 ms): remove connect_timeout, and set that instead'],
    // Misspelled, it was ignored, and the connection was not encrypted.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?sslmod=require' }, `Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets?sslmod=require"; ${notRead('sslmod')}`],
    // libpq's: ignored, the operator believed a standby would be refused.
    [{ DATABASE_DIRECT_URL: 'postgres://app:s3cret@db1/pets?sslmode=require&target_session_attrs=read-write' }, 'Invalid configuration: DATABASE_DIRECT_URL is ' +
    `"postgres://app:***@db1/pets?sslmode=require&target_session_attrs=read-write"; ${notRead('target_session_attrs')}`],
    [{ DATABASE_URL: 'postgres://app@db/pets?sslpassword=s3cret' }, `Invalid configuration: DATABASE_URL is "postgres://***@db/pets?sslpassword=***"; ${notRead('sslpassword')}`],
    // pg reads the parameters of a URL holding a space as encodeURI leaves them: ssl%6Dode was ignored.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?ssl%6Dode=require&application_name=a b' }, 'Invalid configuration: DATABASE_URL is ' +
    `"postgres://app:***@db/pets?ssl%6Dode=require&application_name=a b"; ${notRead('ssl%6Dode')}`],
    // An unpaired surrogate (not from an environment, whose bytes are read as UTF-8) threw a URIError.
    [{ DATABASE_URL: 'postgres://app@db/pets?application_name=\uD800 x&sslmod=require' }, 'Invalid configuration: DATABASE_URL is ' +
    `"postgres://***@db/pets?application_name=\\ud800 x&sslmod=require"; ${notRead('sslmod')}`],
    // The last was read: the connection was not encrypted.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?sslmode=require&sslmode=disable' }, 'Invalid configuration: DATABASE_URL is ' +
    '"postgres://app:***@db/pets?sslmode=require&sslmode=disable"; its parameter "sslmode" is given more than once: keep one'],
    // pg takes a mode it does not know for verify-full: the start failed as an outage would (exit 1), "The server does not support SSL connections".
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?sslmode=bogus' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets?sslmode=bogus"; ' +
    'its sslmode is "bogus": give disable, prefer, require, verify-ca, verify-full or no-verify'],
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?uselibpqcompat=true&sslmode=no-verify' }, 'Invalid configuration: DATABASE_URL is ' +
    '"postgres://app:***@db/pets?uselibpqcompat=true&sslmode=no-verify"; its sslmode is "no-verify": give disable, prefer, require, verify-ca or verify-full (with uselibpqcompat=true)'],
    // Read as a part of application_name.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?application_name=api;sslmode=require' }, 'Invalid configuration: DATABASE_URL is ' +
    '"postgres://app:***@db/pets?application_name=api;sslmode=require"; its query holds a ;: separate its parameters with &'],
    // An encoded name was masked only as written: the password was shown.
    [{ DATABASE_URL: 'postgres://app@db/pets?p%61ssword=s3cret&target_session_attrs=any' }, 'Invalid configuration: DATABASE_URL is ' +
    `"postgres://***@db/pets?p%61ssword=***&target_session_attrs=any"; ${notRead('target_session_attrs')}`],
    [{ REDIS_URL: 'redis://:pw@cache:6379/?p%61ssword=s3cret' }, 'Invalid configuration: REDIS_URL is "redis://:***@cache:6379/?p%61ssword=***"; its parameter "password" ' +
    'is refused: the Redis client would take it as one of its options, over the service\'s own (its wait for Redis among them: REDIS_TIMEOUT_MS): remove the query'],
    // Read, it replaced the service's deadline: 0 failed every statement at once.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?query_timeout=0', DATABASE_STATEMENT_TIMEOUT_MS: '800' }, 'Invalid configuration: DATABASE_URL is ' +
    '"postgres://app:***@db/pets?query_timeout=0"; its query_timeout would replace the service\'s wait for a statement, DATABASE_STATEMENT_TIMEOUT_MS (800 ms): ' +
    'remove query_timeout, and set that instead'],
    // Read, it opened a replication session: every statement with parameters failed.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?replication=database' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets?replication=database"; ' +
    'its replication is refused: the store\'s statements cannot run on a replication connection: remove replication'],
    // Taken, the driver connected to "secretpart" and its error named that host: a part of the password.
    [{ DATABASE_URL: 'postgres://app:hunter2@secretpart/rest@db:5432/pets' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db:5432/pets"; ' +
    'its user name or password holds a / that is not percent-encoded: write / as %2F (and @ as %40)'],
    // The common case: it was no URL, and the message said nothing of the / in the password.
    [{ DATABASE_DIRECT_URL: 'postgres://app:pa/ss@db/pets' }, 'Invalid configuration: DATABASE_DIRECT_URL is "postgres://app:***@db/pets"; ' +
    'its user name or password holds a / that is not percent-encoded: write / as %2F (and @ as %40)'],
    // Said to be a port past 65535: the # began a fragment, and the host ended before the password's rest.
    [{ DATABASE_URL: 'postgres://app:S3cret#PW@db/pets' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets"; ' +
    'its user name or password holds a # that is not percent-encoded: write # as %23 (and @ as %40)'],
    [{ DATABASE_URL: 'postgres://app:pa?ss@db/pets' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets"; ' +
    'its user name or password holds a ? that is not percent-encoded: write ? as %3F (and @ as %40)'],
    // Ignored, it left the operator believing the change notifications took a direct connection.
    [{ DATABASE_URL: 'sqlite:/tmp/pets.db', DATABASE_DIRECT_URL: 'postgres://app:s3cret@db/pets' }, 'Invalid configuration: DATABASE_DIRECT_URL is set, but DATABASE_URL is a ' +
    'SQLite store; DATABASE_DIRECT_URL is for PostgreSQL behind a pooler: unset it, or set DATABASE_URL to the pooler'],
    // Of the form, but no URL: Location headers and the OpenAPI document published its port.
    [{ PUBLIC_BASE_URL: 'https://pets.example.com:99999' }, 'Invalid configuration: PUBLIC_BASE_URL is "https://pets.example.com:99999"; ' +
    'it must be of the form https://pets.example.com or https://example.com/pets: a URL (its port a number up to 65535)'],
    // Taken as written, into the OpenAPI servers, Location and Link: no client could decode them.
    [{ PUBLIC_BASE_URL: 'https://pets.example.com/a%zz' }, 'Invalid configuration: PUBLIC_BASE_URL is "https://pets.example.com/a%zz"; ' +
    'its path is not valid percent-encoded UTF-8: a % must start the %XX of a UTF-8 byte (write % itself as %25)'],
    [{ STAGING_BASE_URL: 'https://pets.example.com/%C0%AF' }, 'Invalid configuration: STAGING_BASE_URL is "https://pets.example.com/%C0%AF"; ' +
    'its path is not valid percent-encoded UTF-8: a % must start the %XX of a UTF-8 byte (write % itself as %25)'],
    // What comes before the @ is masked when it may be a password alone: a user name too, the safe side.
    [{ DATABASE_DIRECT_URL: 'postgres://app@db:5432:1/pets' }, 'Invalid configuration: DATABASE_DIRECT_URL is "postgres://***@db:5432:1/pets"; ' +
    'it must be of the form postgres://USER:PASSWORD@HOST:5432/DB: a URL (its port a number up to 65535)'],
    // Without its //, a URL's password was shown.
    [{ DATABASE_URL: 'postgres:app:s3cret@db/pets' }, 'Invalid configuration: DATABASE_URL is "postgres:app:***@db/pets"; ' +
    'it must be of the form sqlite:PATH or sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB'],
    [{ REDIS_URL: 'redis:s3cret@cache:6379' }, 'Invalid configuration: REDIS_URL is "redis:***@cache:6379"; it must be of the form redis://HOST:PORT or rediss://HOST:PORT'],
    // Of the form, but not a URL ioredis can use: it once passed, to end the service after it started.
    [{ REDIS_URL: 'redis://:s3cret@cache:port' }, 'Invalid configuration: REDIS_URL is "redis://:***@cache:port"; it must be of the form redis://HOST:PORT or rediss://HOST:PORT: ' +
    'a URL (its port a number up to 65535), with no path or a database number (/0)'],
    [{ REDIS_URL: 'redis://cache:6379/notadb' }, 'Invalid configuration: REDIS_URL is "redis://cache:6379/notadb"; it must be of the form redis://HOST:PORT or rediss://HOST:PORT: ' +
    'a URL (its port a number up to 65535), with no path or a database number (/0)'],
    // Taken, it replaced the service's deadline: a frozen Redis held every request for 20 s, not 100 ms.
    [{ REDIS_URL: 'redis://cache:6379/0?commandTimeout=20000' }, 'Invalid configuration: REDIS_URL is "redis://cache:6379/0?commandTimeout=20000"; its parameter "commandTimeout" ' +
    'is refused: the Redis client would take it as one of its options, over the service\'s own (its wait for Redis among them: REDIS_TIMEOUT_MS): remove the query'],
    [{ REDIS_URL: 'rediss://app:s3cret@cache:6380?keyPrefix=x&password=s3cret' }, 'Invalid configuration: REDIS_URL is "rediss://app:***@cache:6380?keyPrefix=***&password=***"; ' +
    'its parameter "keyPrefix" is refused: the Redis client would take it as one of its options, over the service\'s own (its wait for Redis among them: REDIS_TIMEOUT_MS): ' +
    'remove the query'],
    // Of the form the examples show, but too long: the message said only "of the form 90d or 24h".
    [{ API_KEY_DEFAULT_TTL: '1000000d' }, 'Invalid configuration: API_KEY_DEFAULT_TTL is "1000000d"; it must be an integer from 1 to 999999 and one unit of s, m, h or d, such as 90d or 24h'],
    // Taken as paths, they made folders named after the URL, the password in one of them.
    [{ DATABASE_URL: 'sqlite://app:s3cret@db/pets.db' }, 'Invalid configuration: DATABASE_URL is "sqlite://app:***@db/pets.db"; ' +
    'sqlite: takes the store file\'s path after the colon (sqlite:./data/petstore.db, sqlite:/var/lib/petstore.db), not a URL'],
    [{ DATABASE_URL: 'sqlite:file:/tmp/pets.db?mode=ro' }, 'Invalid configuration: DATABASE_URL is "sqlite:file:/tmp/pets.db?mode=ro"; ' +
    'sqlite: takes the store file\'s path after the colon (sqlite:./data/petstore.db, sqlite:/var/lib/petstore.db), not a URL'],
    // pg and ioredis take a password in the query too.
    [{ DATABASE_URL: 'postgres://app@db:99999/pets?sslmode=require&password=s3cret' }, 'Invalid configuration: DATABASE_URL is "postgres://***@db:99999/pets?sslmode=require&password=***"; ' +
    'it must be of the form sqlite:PATH or sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB: a URL (its port a number up to 65535)'],
    [{ REDIS_URL: 'redis://cache:99999/?Password=s3cret' }, 'Invalid configuration: REDIS_URL is "redis://cache:99999/?Password=***"; it must be of the form redis://HOST:PORT or rediss://HOST:PORT: ' +
    'a URL (its port a number up to 65535), with no path or a database number (/0)'],
    [{ DATABASE_DIRECT_URL: 'unix:///tmp/x?sslpassword=s3cret&x=1' }, 'Invalid configuration: DATABASE_DIRECT_URL is "unix:///tmp/x?sslpassword=***&x=1"; ' +
    'it must be of the form postgres://USER:PASSWORD@HOST:5432/DB'],
    // pg decoded it alone, at the first connection: "URI malformed", exit 1, no setting named.
    [{ DATABASE_URL: 'postgres://app:s3%E0cret@db/pets' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets"; ' +
    'its password holds a percent-encoding that is not UTF-8: write a % that is part of it as %25'],
    [{ DATABASE_URL: 'postgres://app@db/p%E0ts' }, 'Invalid configuration: DATABASE_URL is "postgres://***@db/p%E0ts"; ' +
    'its database name holds a percent-encoding that is not UTF-8: write a % that is part of it as %25'],
    // ioredis decoded it alone, as it connected: "URI malformed", exit 1, no setting named.
    [{ REDIS_URL: 'redis://:R3dis%ZZPw@cache:6379' }, 'Invalid configuration: REDIS_URL is "redis://:***@cache:6379"; ' +
    'its password holds a percent-encoding that is not UTF-8: write a % that is part of it as %25'],
    // A credential's value runs to the next &: pg and ioredis read a ; or a # after it as part of it, or as a fragment.
    [{ DATABASE_URL: 'postgres://app@db:99999/pets?password=Pw1;Pw2' }, 'Invalid configuration: DATABASE_URL is "postgres://***@db:99999/pets?password=***"; ' +
    'it must be of the form sqlite:PATH or sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB: a URL (its port a number up to 65535)'],
    [{ DATABASE_URL: 'postgres://app@db:99999/pets?application_name=api;password=S3cret' }, 'Invalid configuration: DATABASE_URL is "postgres://***@db:99999/pets?application_name=api;password=***"; ' +
    'it must be of the form sqlite:PATH or sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB: a URL (its port a number up to 65535)'],
    [{ REDIS_URL: 'redis://cache:99999/0?password=a#R3disTail' }, 'Invalid configuration: REDIS_URL is "redis://cache:99999/0?password=***"; it must be of the form redis://HOST:PORT or rediss://HOST:PORT: ' +
    'a URL (its port a number up to 65535), with no path or a database number (/0)'],
    // pg's socket threw at connect, out of its pool's reach: every command hung on closing the store and exited 13, saying nothing.
    [{ DATABASE_URL: 'postgres://app:s3cret@db/pets?port=99999' }, 'Invalid configuration: DATABASE_URL is "postgres://app:***@db/pets?port=99999"; ' +
    'its port is "99999": give a number from 1 to 65535'],
    [{ DATABASE_DIRECT_URL: 'postgres://app@db/pets?port=abc' }, 'Invalid configuration: DATABASE_DIRECT_URL is "postgres://***@db/pets?port=abc"; ' +
    'its port is "abc": give a number from 1 to 65535'],
    // better-sqlite3 trims the name it opens: the service checked one file and SQLite opened, or made, another.
    [{ DATABASE_URL: 'sqlite:./pets.db ' }, 'Invalid configuration: DATABASE_URL is "sqlite:./pets.db "; the path begins or ends with white space, ' +
    'which SQLite would drop: give it without'],
    // SQLite made a file named after the whole text, options included.
    [{ DATABASE_URL: 'sqlite:./pets.db?mode=ro' }, 'Invalid configuration: DATABASE_URL is "sqlite:./pets.db?mode=ro"; ' +
    'sqlite: takes a path as written (a shell expands ~, the service does not; ?name=value would be part of the file\'s name), or :memory: (sqlite::memory:)'],
    // Each request's line is at info: none was written, and nothing said why.
    [{ LOG_REQUESTS: 'on', LOG_LEVEL: 'warn' }, 'Invalid configuration: LOG_REQUESTS is on, and LOG_LEVEL is warn, which leaves out the requests\' lines (at info): ' +
    'set LOG_LEVEL to info, debug or trace, or LOG_REQUESTS to off'],
    // Its listener failed as if another process held the port.
    [{ METRICS_PORT: '8080' }, 'Invalid configuration: METRICS_PORT is 8080, the port of the API (PORT); the metrics need a port of their own'],
    [{ PORT: '9000', METRICS_PORT: '9000' }, 'Invalid configuration: METRICS_PORT is 9000, the port of the API (PORT); the metrics need a port of their own']
  ]
  for (const [env, message] of cases) assert.throws(() => loadConfig(env), { name: 'ConfigError', message })
  assert.equal(loadConfig({ PORT: '0', METRICS_PORT: '0' }).METRICS_PORT, 0, 'two ports the system picks are two ports')
  const inQuery = 'postgres://app:s3cret@db/pets?application_name=billing@eu'
  assert.equal(loadConfig({ DATABASE_URL: inQuery }).DATABASE_URL, inQuery, 'an @ in the query is no password\'s')
})

test('PUBLIC_BASE_URL is kept as URLs are sent: its host in ASCII (IDNA), its path percent-encoded', () => {
  const config = loadConfig({ PUBLIC_BASE_URL: 'https://пример.рф/магазин/a"b<c>/', STAGING_BASE_URL: 'https://Staging.Example.com' })
  assert.equal(config.PUBLIC_BASE_URL, 'https://xn--e1afmkfd.xn--p1ai/%D0%BC%D0%B0%D0%B3%D0%B0%D0%B7%D0%B8%D0%BD/a%22b%3Cc%3E')
  assert.equal(config.STAGING_BASE_URL, 'https://staging.example.com')
})

test('an invalid value is a one-line error naming the variable', () => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ PUBLIC_BASE_URL: 'pets.example.com' }, 'PUBLIC_BASE_URL'],
    [{ PUBLIC_BASE_URL: 'https://pets.example.com/v1' }, 'PUBLIC_BASE_URL'],
    // Opened as written, they made a folder named ~ and a file named :memory.
    [{ DATABASE_URL: 'sqlite:~/pets.db' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'sqlite::memory' }, 'DATABASE_URL'],
    // As parsed, /v1 all the same: the document's server was .../v1/v1.
    [{ PUBLIC_BASE_URL: 'https://pets.example.com/v1/.' }, 'PUBLIC_BASE_URL'],
    [{ STAGING_BASE_URL: 'https://pets.example.com/api/x/../v1' }, 'STAGING_BASE_URL'],
    // The OpenAPI document, served without a key, lists these URLs: a password in one would be published.
    [{ PUBLIC_BASE_URL: 'https://u:s3cretPW@pets.example.com' }, 'PUBLIC_BASE_URL'],
    [{ STAGING_BASE_URL: 'https://s3cretPW@staging.example.com' }, 'STAGING_BASE_URL'],
    // A root URL holds no query or fragment: the API's paths would follow them.
    [{ PUBLIC_BASE_URL: 'https://pets.example.com/api?x=1' }, 'PUBLIC_BASE_URL'],
    [{ PUBLIC_BASE_URL: 'https://pets.example.com/api#top' }, 'PUBLIC_BASE_URL'],
    // Integers in decimal digits, as the README says: not hexadecimal, an exponent or a fraction.
    [{ RATE_LIMIT_PER_MINUTE: '0x10' }, 'RATE_LIMIT_PER_MINUTE'],
    [{ DATABASE_CONNECT_TIMEOUT_MS: '1e3' }, 'DATABASE_CONNECT_TIMEOUT_MS'],
    [{ PORT: ' 8080' }, 'PORT'],
    // A wait of 0 ms would count no request; one of minutes would hold every request as long.
    [{ REDIS_TIMEOUT_MS: '0' }, 'REDIS_TIMEOUT_MS'],
    [{ REDIS_TIMEOUT_MS: '60000' }, 'REDIS_TIMEOUT_MS']
  ]
  for (const [env, name] of cases) {
    assert.throws(() => loadConfig(env), (error: Error) => {
      assert.ok(error instanceof ConfigError)
      assert.ok(error.message.includes(name), error.message)
      assert.ok(!error.message.includes('\n'))
      assert.ok(!error.message.includes('s3cretPW'), error.message)
      return true
    })
  }
})

test('a PostgreSQL URL without a database is taken when PGDATABASE names one, as the driver then connects to it', () => {
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://app@db:5432', PGDATABASE: 'pets' }).DATABASE_URL, 'postgres://app@db:5432')
})

test('a PostgreSQL URL with the parameters pg reads is taken', () => {
  const url = 'postgres://app:pw@localhost/pets?host=/var/run/postgresql&port=5433&user=app&password=pw&options=-c%20search_path%3Dpets&application_name=api' +
    '&fallback_application_name=petstore&ssl=true&sslmode=verify-full&sslnegotiation=postgres&uselibpqcompat=true&statement_timeout=3000&lock_timeout=1000' +
    '&idle_in_transaction_session_timeout=5000'
  assert.equal(loadConfig({ DATABASE_URL: url }).DATABASE_URL, url)
})

test('a PostgreSQL URL without a host, which names the server\'s socket in its query, is taken, as pg and libpq take it', () => {
  const url = 'postgres://app@/pets?host=/var/run/postgresql'
  assert.equal(loadConfig({ DATABASE_URL: url }).DATABASE_URL, url)
  assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://app@/pets?host=/var/run/postgresql&sslmod=require' }), /its parameter "sslmod" is not read by pg/)
})

test('a PostgreSQL URL with an @ in its query is taken: the @ is a parameter\'s, not a password\'s', () => {
  for (const url of ['postgres://app:pw@db/pets?application_name=ops@host', 'postgres://db?application_name=ops@host', 'postgres://app:pw@db?sslmode=require#ops@host']) {
    assert.equal(loadConfig({ DATABASE_URL: url, PGDATABASE: 'pets' }).DATABASE_URL, url)
  }
})
