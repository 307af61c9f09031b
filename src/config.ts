import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { DURATION_PATTERN, DURATION_RULE } from './api-keys/duration.js'
import { parseTrustedProxies } from './trusted-proxies.js'
import { DEFAULT_RETRY_SCHEDULE, RETRY_SCHEDULE_PATTERN, RETRY_SCHEDULE_RULE } from './webhooks/retry-schedule.js'

/** A service root: scheme, host and optional path prefix, without /v1, query or fragment. */
function BaseUrl (description: string) {
  return Type.String({ pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$', description, examples: ['https://pets.example.com', 'https://example.com/pets'] })
}

/** The environment variables the service reads, with their defaults. */
export const ConfigSchema = Type.Object({
  DATABASE_URL: Type.String({
    default: 'sqlite:./data/petstore.db',
    pattern: '^(sqlite:.+|postgres(ql)?://.+)$',
    description: 'sqlite:PATH (":memory:" for a throw-away store) or postgres://...',
    examples: ['sqlite:PATH', 'sqlite::memory:', 'postgres://USER:PASSWORD@HOST:PORT/DB']
  }),
  DATABASE_DIRECT_URL: Type.Optional(Type.String({
    pattern: '^postgres(ql)?://.+$',
    description: 'PostgreSQL behind a pooler (PgBouncer in transaction mode): a direct connection to the same database, for the change ' +
      'notifications the read caches listen to (LISTEN); unset, DATABASE_URL is used',
    examples: ['postgres://USER:PASSWORD@HOST:5432/DB']
  })),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'PostgreSQL connections per instance' }),
  DATABASE_CONNECT_TIMEOUT_MS: Type.Integer({
    minimum: 1,
    maximum: 600_000,
    default: 2000,
    description: 'PostgreSQL: the longest wait for a connection (a new one, or a free one of the pool) before a 503'
  }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 1,
    maximum: 3_600_000,
    default: 5000,
    description: 'PostgreSQL: the longest wait for a statement before a 503, and the longest a transaction may sit idle'
  }),
  DURABILITY: Type.Enum(['default', 'strict'], {
    default: 'default',
    description: 'default: commits survive a crash of the process; strict: also a power loss (SQLite synchronous=FULL)'
  }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  SHUTDOWN_GRACE_MS: Type.Integer({
    minimum: 1,
    maximum: 3_600_000,
    default: 10_000,
    description: 'on SIGTERM or SIGINT: the longest wait for the requests in flight to finish and the store to close; past it the process exits 1 without them'
  }),
  WEB_CONCURRENCY: Type.Integer({
    minimum: 1,
    maximum: 256,
    default: 1,
    description: 'processes serving the API on the one port (node:cluster), one per core to use; their metrics are summed on METRICS_PORT'
  }),
  HOST: Type.String({ minLength: 1, default: '0.0.0.0' }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  LOG_FORMAT: Type.Enum(['auto', 'json', 'pretty'], {
    default: 'auto',
    description: 'json: one JSON object a line; pretty: lines a person reads; auto: pretty when stdout is a terminal, else json'
  }),
  LOG_REQUESTS: Type.Enum(['auto', 'on', 'off'], {
    default: 'auto',
    description: 'one line per request at info (method, path, status, duration); auto: on when stdout is a terminal'
  }),
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, description: 'serves GET /metrics (Prometheus) on this port; off unless set' })),
  // Metrics have no key: off the network unless an operator says otherwise.
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address the metrics listener binds to' }),
  // The RateLimit headers carry it as a structured-field integer, which has at most 15 digits (RFC 8941).
  RATE_LIMIT_PER_MINUTE: Type.Integer({
    minimum: 0,
    maximum: 999_999_999_999_999,
    default: 600,
    description: 'requests per minute per API key (and per client address without a valid key); 0 turns limiting off'
  }),
  TRUST_PROXY: Type.Optional(Type.String({
    description: 'addresses or CIDRs of the proxies in front, comma-separated: on connections from them, X-Forwarded-For gives the client address ' +
      'for per-address rate limits, and they are exempt from CONNECTIONS_PER_ADDRESS; unset, X-Forwarded-For is ignored',
    examples: ['10.0.0.0/8', '127.0.0.1,10.1.2.0/24']
  })),
  CONNECTIONS_PER_ADDRESS: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 256,
    description: 'open connections one client address may hold; more are closed at once'
  }),
  API_KEY_DEFAULT_TTL: Type.Optional(Type.String({
    pattern: DURATION_PATTERN,
    description: 'the lifetime of a new API key made without --expires-in or --expires-at (the first key included); keys never expire unless set',
    examples: ['90d', '24h']
  })),
  MAX_STREAMS_PER_KEY: Type.Integer({
    minimum: 1,
    maximum: 10_000,
    default: 5,
    description: 'open event streams (GET /v1/events/stream) one API key may hold on an instance; one more is a 429'
  }),
  EVENT_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 3650,
    default: 30,
    description: 'days an event is kept in the event log; older ones are deleted in the background'
  }),
  WEBHOOK_ALLOW_PRIVATE: Type.Enum(['true', 'false'], {
    default: 'false',
    description: 'for development only: lets webhooks use http and reach private, loopback and link-local addresses'
  }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({
    pattern: RETRY_SCHEDULE_PATTERN,
    default: DEFAULT_RETRY_SCHEDULE,
    description: 'the waits before each retry of a failed webhook delivery (20 % jitter either side); after the last the subscription is disabled',
    examples: ['5s,5m,30m,2h', '200ms,1s']
  }),
  REDIS_URL: Type.Optional(Type.String({
    pattern: '^rediss?://.+$',
    description: 'shares rate-limit counters between instances',
    examples: ['redis://HOST:PORT', 'rediss://HOST:PORT']
  })),
  REDIS_TIMEOUT_MS: Type.Integer({
    minimum: 1,
    maximum: 10_000,
    default: 100,
    description: 'with REDIS_URL: the longest a request waits for Redis to count it; past that it passes uncounted, and so do all requests for 10 s'
  }),
  PUBLIC_BASE_URL: Type.Optional(BaseUrl('the public root URL of the service, without /v1; the first server in the OpenAPI document')),
  STAGING_BASE_URL: Type.Optional(BaseUrl('the root URL of the staging deployment, without /v1; listed as the second server'))
})

/** The names of every environment variable the service reads. */
export const CONFIG_VARIABLES = Object.keys(ConfigSchema.properties)

/** The service's settings, read once from the environment and never changed after. */
export type Config = Readonly<Static<typeof ConfigSchema>>

/** Thrown for a setting that cannot be used; its message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

interface SettingSchema { enum?: string[], type?: string, minimum?: number, maximum?: number, pattern?: string, examples?: string[] }

const INTEGER_VARIABLES = Object.entries(ConfigSchema.properties as Record<string, SettingSchema>).flatMap(([name, { type }]) => type === 'integer' ? [name] : [])

/** What a setting accepts, in words, from its schema. */
function allowedValues (name: string): string {
  const schema = (ConfigSchema.properties as Record<string, SettingSchema>)[name]!
  if (schema.enum !== undefined) return `one of ${schema.enum.join(', ')}`
  if (schema.type === 'integer') return schema.maximum === undefined ? `an integer of at least ${schema.minimum}` : `an integer from ${schema.minimum} to ${schema.maximum}`
  if (schema.pattern === DURATION_PATTERN) return DURATION_RULE
  if (schema.pattern === RETRY_SCHEDULE_PATTERN) return RETRY_SCHEDULE_RULE
  if (schema.examples !== undefined) return `of the form ${schema.examples.join(' or ')}`
  return 'a non-empty string'
}

/**
 * A URL's password replaced by ***, so that an error about a URL never shows the secret in it: what
 * follows the user name's `:` up to the last `@` (a password may hold an unescaped `/` or `@`), or
 * without that `:` all of what comes before the `@`, a URL missing its `//` as well; and the value of
 * every query parameter named like a credential (pg and ioredis both take `?password=`). Masking too
 * much is the safe side.
 */
function withoutPassword (value: string): string {
  const at = value.lastIndexOf('@')
  if (at === -1) return withoutCredentialParameters(value)
  const userStart = /^[a-z][a-z\d+.-]*:\/{0,2}/i.exec(value)?.[0].length ?? 0
  const colon = value.indexOf(':', userStart)
  const secretStart = colon !== -1 && colon < at ? colon + 1 : userStart
  return `${value.slice(0, secretStart)}***${withoutCredentialParameters(value.slice(at))}`
}

const CREDENTIAL_NAME = /pass|pwd|secret|token|key|auth|cred/i

/**
 * Masks each parameter named like a credential, its name read as the driver reads it (`p%61ssword` is
 * `password`): first up to a `;` or `#` after it, which may start another (`application_name=api;password=...`),
 * then up to the next `&`, as the drivers read its value (`password=a;b` is `a;b`, `password=a#b` ends in a fragment).
 */
function withoutCredentialParameters (url: string): string {
  return [/([?&;])([^=&;#]*)=[^&;#]*/g, /([?&;])([^=&;#]*)=[^&]*/g].reduce((masked, parameters) => masked.replace(parameters, (parameter, separator: string, name: string) =>
    CREDENTIAL_NAME.test(decoded(name.replaceAll('+', ' ')) ?? name) ? `${separator}${name}=***` : parameter), url)
}

/** `decode(text)`; undefined where it throws, on a percent-encoding that is no UTF-8 (`%E0`). */
function decoded (text: string, decode = decodeURIComponent): string | undefined {
  try {
    return decode(text)
  } catch {
    return undefined
  }
}

/**
 * The character that ended a URL's host early, if an @ follows it: a /, ? or # in the user name or
 * password, not percent-encoded, ends the host there, and the driver would connect to a host named
 * after a part of the password (`app:pw@sec/ret@db/pets`), which its error shows, or fail on a port
 * made of one (`app:pa/ss@db/pets`, `app:pa#ss@db/pets`: said to be a port past 65535).
 */
function splitsUserInfo (url: string): string | undefined {
  const afterScheme = url.slice(url.indexOf('//') + 2)
  const hostEnd = afterScheme.search(/[/?#]/)
  if (hostEnd === -1) return undefined
  const ender = afterScheme[hostEnd]!
  // An @ in the query is a parameter's (application_name=a@b): after a ? or #, one counts only in
  // what is no URL.
  if (ender !== '/') return afterScheme.includes('@', hostEnd) && !URL.canParse(url) ? ender : undefined
  return afterScheme.slice(hostEnd).split(/[?#]/, 1)[0]!.includes('@') ? ender : undefined
}

/** The error for a setting of the form its pattern asks that is still no URL (a port past 65535, say). */
function notAUrl (name: string, value: string, rule = ''): ConfigError {
  return new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(withoutPassword(value))}; it must be ${allowedValues(name)}: a URL (its port a number up to 65535)${rule}`)
}

/**
 * The parameters of a PostgreSQL URL that pg, the driver, reads (through pg-connection-string) and
 * that leave the store working as it must. pg copies any other name into its settings and reads it no
 * further: libpq's own (target_session_attrs, keepalives, channel_binding...) and a misspelled one
 * (sslmod=require, which left the connection unencrypted) were ignored without a word.
 */
const READ_URL_PARAMETERS = [
  'host', 'port', 'user', 'password', 'options', 'application_name', 'fallback_application_name',
  'ssl', 'sslmode', 'sslcert', 'sslkey', 'sslrootcert', 'sslnegotiation', 'uselibpqcompat',
  'statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout'
]

// The modes pg-connection-string knows; it took any other (a typo, libpq's `allow`) for verify-full.
const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']
// Those it knows with uselibpqcompat=true: no-verify is pg's own.
const LIBPQ_SSL_MODES = SSL_MODES.filter((mode) => mode !== 'no-verify')

/**
 * A PostgreSQL URL as pg-connection-string, pg's parser, reads it; undefined when it cannot. A URL
 * holding a space or a % without two hex digits is put through `encodeURI` first, which leaves an
 * encoded name (`ssl%6Dode`) as it is; one without a host (`app@/db?host=/run/postgresql`, libpq's
 * way to name a socket) is read with a stand-in for it.
 */
function asPgReads (url: string): URL | undefined {
  // Well formed, as encodeURI throws on an unpaired surrogate, where the URL parser reads it as U+FFFD.
  const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url.toWellFormed()).replace(/%25(\d\d)/g, '%$1') : url
  return URL.parse(encoded) ?? URL.parse(encoded.replace('@/', '@stand-in/')) ?? undefined
}

/**
 * The part of a PostgreSQL URL that pg would fail to decode, which it reports as `URI malformed`
 * alone: a percent-encoding that is no UTF-8 (`%E0`) in the user name, password or database.
 */
function undecodable ({ username, password, pathname }: URL): string | undefined {
  if (decoded(username) === undefined) return 'user name'
  if (decoded(password) === undefined) return 'password'
  return decoded(pathname, decodeURI) === undefined ? 'database name' : undefined
}

/** Refuses a URL (`asRead`, as its driver reads `url`) with a part its driver would fail to decode as it connects. */
function throwIfUndecodable (name: string, url: string, asRead: URL): void {
  const part = undecodable(asRead)
  if (part === undefined) return
  throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(withoutPassword(url))}; its ${part} holds a percent-encoding that is not UTF-8: ` +
    'write a % that is part of it as %25')
}

/** Why a PostgreSQL URL's parameters, as pg reads them, are refused at start; undefined when each is read as written. */
function refusedParameters ({ searchParams, search }: URL, config: Config): string | undefined {
  // Read as a part of the value before it (application_name=api;sslmode=require is one name).
  if (search.includes(';')) return 'its query holds a ;: separate its parameters with &'
  const names = [...searchParams.keys()]
  const repeated = names.find((parameter, i) => names.indexOf(parameter) !== i)
  // The last one is read: sslmode=require&sslmode=disable connected without TLS.
  if (repeated !== undefined) return `its parameter ${JSON.stringify(repeated)} is given more than once: keep one`
  const sslMode = searchParams.get('sslmode')
  const sslModes = searchParams.get('uselibpqcompat') === 'true' ? LIBPQ_SSL_MODES : SSL_MODES
  if (sslMode !== null && !sslModes.includes(sslMode)) {
    return `its sslmode is ${JSON.stringify(sslMode)}: give ${sslModes.slice(0, -1).join(', ')} or ${sslModes.at(-1)}${sslModes === LIBPQ_SSL_MODES ? ' (with uselibpqcompat=true)' : ''}`
  }
  // pg's socket threw on it at connect, out of its pool's reach: a command then never ended.
  const port = searchParams.get('port')
  if (port !== null && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) return `its port is ${JSON.stringify(port)}: give a number from 1 to 65535`
  return names.map((parameter) => refusedParameter(parameter, config)).find((reason) => reason !== undefined)
}

/** Why a PostgreSQL URL's parameter is refused at start; undefined when it is read as written. */
function refusedParameter (parameter: string, config: Config): string | undefined {
  if (READ_URL_PARAMETERS.includes(parameter)) return undefined
  switch (parameter) {
    // libpq's, which pg overwrites with its own setting.
    case 'connect_timeout':
      return `its connect_timeout is not read: the wait for a connection is DATABASE_CONNECT_TIMEOUT_MS (${config.DATABASE_CONNECT_TIMEOUT_MS} ms): ` +
        'remove connect_timeout, and set that instead'
    // Read, it replaced the service's deadline: 0 failed every statement, a large one let a frozen server hold requests.
    case 'query_timeout':
      return `its query_timeout would replace the service's wait for a statement, DATABASE_STATEMENT_TIMEOUT_MS (${config.DATABASE_STATEMENT_TIMEOUT_MS} ms): ` +
        'remove query_timeout, and set that instead'
    // Read, it opened a replication session, which refused every statement with parameters.
    case 'replication':
      return 'its replication is refused: the store\'s statements cannot run on a replication connection: remove replication'
    default:
      return `its parameter ${JSON.stringify(parameter)} is not read by pg, the service's PostgreSQL driver, and would be ignored without a word: ` +
        `remove it (the parameters read are ${READ_URL_PARAMETERS.join(', ')})`
  }
}

/** The path of the SQLite store that a DATABASE_URL names (`:memory:` for a throw-away one); undefined for a PostgreSQL store. */
export function sqlitePathOf (databaseUrl: string): string | undefined {
  return databaseUrl.startsWith('sqlite:') ? databaseUrl.slice('sqlite:'.length) : undefined
}

/** Reads the configuration from an environment, applying defaults; the only reader of process.env. */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, string> = {}
  for (const name of CONFIG_VARIABLES) {
    const value = env[name]
    // An empty variable means "not set", as in most shells' `VAR= command`.
    if (value !== undefined && value !== '') raw[name] = value
  }
  // An integer here is 1 to 20 decimal digits: Value.Convert would take any text JavaScript takes for a
  // number (0x10, 1e3, ' 8080'), and enough digits make Infinity.
  const notDigits = INTEGER_VARIABLES.find((name) => raw[name] !== undefined && !/^\d{1,20}$/.test(raw[name]))
  // Checked by TypeBox's interpreter, not by a validator Ajv compiles: the configuration is read once a
  // process, and compiling it cost every command about 20 ms of CPU at its start (architecture.md).
  const config = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Static<typeof ConfigSchema>
  if (notDigits !== undefined || !Value.Check(ConfigSchema, config)) {
    const name = notDigits ?? Value.Errors(ConfigSchema, config)[0]?.instancePath.slice(1) ?? ''
    throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(withoutPassword(env[name] ?? ''))}; it must be ${allowedValues(name)}`)
  }
  if (config.TRUST_PROXY !== undefined && parseTrustedProxies(config.TRUST_PROXY) === undefined) {
    throw new ConfigError(`Invalid configuration: TRUST_PROXY is ${JSON.stringify(config.TRUST_PROXY)}; it must be ${allowedValues('TRUST_PROXY')}: ` +
      'addresses (IPv4 as four decimal numbers) or CIDRs, comma-separated; none wider than an IPv4 /8 or an IPv6 /7 (a /0, or two /1s, would let every client ' +
      'choose its own address)')
  }
  // The patterns take any text after postgres:// or redis://; the driver would fail on it only when it connects.
  for (const name of ['DATABASE_URL', 'DATABASE_DIRECT_URL'] as const) {
    const url = config[name]
    if (url?.startsWith('postgres') !== true) continue
    const ender = splitsUserInfo(url)
    if (ender !== undefined) {
      throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(withoutPassword(url))}; its user name or password holds a ${ender} ` +
        `that is not percent-encoded: write ${ender} as ${encodeURIComponent(ender)} (and @ as %40)`)
    }
    const asRead = asPgReads(url)
    if (asRead === undefined) throw notAUrl(name, url)
    // The driver then takes PGDATABASE's, or else the user's name for it: postgres, the server's own,
    // which a command migrated without a word.
    if (['', '/'].includes(asRead.pathname) && (env.PGDATABASE ?? '') === '') {
      throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(withoutPassword(url))}; it names no database: add /DB after the host and port (or set PGDATABASE)`)
    }
    throwIfUndecodable(name, url, asRead)
    const refusal = refusedParameters(asRead, config)
    if (refusal !== undefined) throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(withoutPassword(url))}; ${refusal}`)
  }
  if (config.DATABASE_DIRECT_URL !== undefined && !config.DATABASE_URL.startsWith('postgres')) {
    throw new ConfigError('Invalid configuration: DATABASE_DIRECT_URL is set, but DATABASE_URL is a SQLite store; ' +
      'DATABASE_DIRECT_URL is for PostgreSQL behind a pooler: unset it, or set DATABASE_URL to the pooler')
  }
  // SQLite opens any text as a path: a URL there made folders named after it, a password among them.
  if (/^sqlite:(\/\/|file:)/.test(config.DATABASE_URL)) {
    throw new ConfigError(`Invalid configuration: DATABASE_URL is ${JSON.stringify(withoutPassword(config.DATABASE_URL))}; ` +
      'sqlite: takes the store file\'s path after the colon (sqlite:./data/petstore.db, sqlite:/var/lib/petstore.db), not a URL')
  }
  // SQLite opens these as names of files: a folder named ~ in the working folder, a file named :memory,
  // one named petstore.db?mode=ro (options of SQLite's URIs, which the service does not open).
  const sqlitePath = sqlitePathOf(config.DATABASE_URL)
  // SQLite's driver trims the name it opens: the service would check one file, and SQLite open another.
  if (sqlitePath !== undefined && sqlitePath !== sqlitePath.trim()) {
    throw new ConfigError(`Invalid configuration: DATABASE_URL is ${JSON.stringify(withoutPassword(config.DATABASE_URL))}; the path begins or ends with white space, which SQLite would drop: give it without`)
  }
  if (sqlitePath !== undefined && (sqlitePath.startsWith('~') || (sqlitePath.startsWith(':') && sqlitePath !== ':memory:') || /\?[^/]*=/.test(sqlitePath))) {
    throw new ConfigError(`Invalid configuration: DATABASE_URL is ${JSON.stringify(withoutPassword(config.DATABASE_URL))}; ` +
      'sqlite: takes a path as written (a shell expands ~, the service does not; ?name=value would be part of the file\'s name), or :memory: (sqlite::memory:)')
  }
  // A request's line is at info: a level above it left every one out, without a word.
  if (config.LOG_REQUESTS === 'on' && ['fatal', 'error', 'warn', 'silent'].includes(config.LOG_LEVEL)) {
    throw new ConfigError(`Invalid configuration: LOG_REQUESTS is on, and LOG_LEVEL is ${config.LOG_LEVEL}, which leaves out the requests' lines (at info): ` +
      'set LOG_LEVEL to info, debug or trace, or LOG_REQUESTS to off')
  }
  // ioredis reads the path as the database's number, and a path of another kind as NaN.
  const redisUrl = config.REDIS_URL
  if (redisUrl !== undefined && !(URL.canParse(redisUrl) && /^\/?\d*$/.test(new URL(redisUrl).pathname))) {
    throw notAUrl('REDIS_URL', redisUrl, ', with no path or a database number (/0)')
  }
  // ioredis decodes the user name and password as it connects: "URI malformed", exit 1, no setting named.
  if (redisUrl !== undefined) throwIfUndecodable('REDIS_URL', redisUrl, new URL(redisUrl))
  // ioredis takes each query parameter as one of its options, over the service's own: commandTimeout
  // there let a frozen Redis hold every request for as long as it said, past REDIS_TIMEOUT_MS.
  const [redisParameter] = redisUrl === undefined ? [] : new URL(redisUrl).searchParams.keys()
  if (redisUrl !== undefined && redisParameter !== undefined) {
    throw new ConfigError(`Invalid configuration: REDIS_URL is ${JSON.stringify(withoutPassword(redisUrl))}; its parameter ${JSON.stringify(redisParameter)} is refused: ` +
      'the Redis client would take it as one of its options, over the service\'s own (its wait for Redis among them: REDIS_TIMEOUT_MS): remove the query')
  }
  for (const name of ['PUBLIC_BASE_URL', 'STAGING_BASE_URL'] as const) {
    const url = config[name]?.replace(/\/+$/, '')
    if (url === undefined) continue
    if (!URL.canParse(url)) throw notAUrl(name, url)
    // As parsed: `/v1/.` is `/v1`.
    if (new URL(url).pathname.replace(/\/+$/, '').endsWith('/v1')) throw new ConfigError(`Invalid configuration: ${name} must be the service root, without /v1`)
    // The OpenAPI document, served without a key, lists it, and Location headers start with it.
    if (/^https?:\/\/[^/]*@/.test(url)) throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(withoutPassword(url))}; it must not hold a user name or password`)
    const parsed = new URL(url)
    if (parsed.search !== '' || parsed.hash !== '') throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(url)}; it must not hold a query or a fragment`)
    // The URL parser keeps a % that starts no %XX, or one of bytes that are no UTF-8, as written.
    if (decoded(parsed.pathname, decodeURI) === undefined) {
      throw new ConfigError(`Invalid configuration: ${name} is ${JSON.stringify(url)}; its path is not valid percent-encoded UTF-8: ` +
        'a % must start the %XX of a UTF-8 byte (write % itself as %25)')
    }
    // As URLs are sent (`Location`, `Link`): the host in ASCII, the path percent-encoded. Taken as
    // written, a character past Latin-1 made every such header, and the answers that carry one, fail.
    config[name] = parsed.href.replace(/\/+$/, '')
  }
  // The API binds every address by default: on its port, the metrics' listener failed as if another process held it.
  if (config.METRICS_PORT !== undefined && config.METRICS_PORT !== 0 && config.METRICS_PORT === config.PORT) {
    throw new ConfigError(`Invalid configuration: METRICS_PORT is ${config.METRICS_PORT}, the port of the API (PORT); the metrics need a port of their own`)
  }
  return Object.freeze(config)
}
