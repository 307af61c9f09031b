#!/usr/bin/env -S node --max-semi-space-size=8
// V8's young generation is kept at 2 × 8 MB instead of 2 × 16: under load the service then peaks
// 12-14 MB lower in RSS, at the same throughput (bench, side by side). `npm start` and the `petstore`
// command both start through this line.
import '../next-tick-shape.js' // first: see there
import { existsSync, fstatSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import { insertApiKey, findApiKeys, revokeApiKey, rotateApiKey } from '../api-keys/api-key.repository.js'
import { generateApiKey } from '../api-keys/api-key.service.js'
import { DEFAULT_VERIFIER_OPTIONS } from '../api-keys/api-key.verifier.js'
import { SCOPES, scopeList } from '../api-keys/scopes.js'
import { stoppedClock } from '../clock.js'
import { ConfigError, loadConfig, sqlitePathOf } from '../config.js'
import { migrateToLatest, newerMigrationsMessage } from '../db/migrate.js'
import { messageOf } from '../error-message.js'
import { printable } from '../printable.js'
import { INT64_MAX } from '../validation/int64.js'
import { openStore, sqliteStoreFiles, storeOptionsFrom } from '../store/open-store.js'
import { backupSqliteStore } from '../store/sqlite/sqlite-backup.js'
import type { Store } from '../store/store.js'
import { VERSION } from '../version.js'
import { withoutSecrets } from '../without-secrets.js'
import { printProcessWarnings } from '../process-warnings.js'
import { ImportUsageError, runPetsImport, type PetsImportOptions } from './pets-import.js'
import { commandName } from './command-name.js'
import { collectScope, expiryOf, parseDurationOption, parseInstant, parseKeyName, parseOverlap, refuseImpossibleLifetime, replacementExpiryOf, type LifetimeOptions } from './key-options.js'
import { plainTable } from './plain-table.js'

/**
 * What stops `pets import` after its batch under way, with its report: a terminal's Ctrl-C, a process
 * manager's SIGTERM. Not the service's other stops (see held-stop-signals): a SIGHUP, its terminal
 * gone, ends it at once, as Node's default does, without a report (the batch under way is not stored),
 * which that terminal could not show.
 */
const IMPORT_STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const

/** Exit codes: 0 success, 1 the command failed, 2 bad configuration or usage. */
const EXIT_FAILURE = 1
const EXIT_USAGE = 2

/** Opens the configured store, brings its schema up to date (unless told not to), runs `work` and closes the store. */
async function withStore<T> (work: (store: Store) => Promise<T>, { migrate = true } = {}): Promise<T> {
  const config = loadConfig()
  const store = openStore(config.DATABASE_URL, storeOptionsFrom(config))
  try {
    if (migrate) warnOfNewerMigrations((await migrateToLatest(store.db)).newer)
    return await work(store)
  } finally {
    await store.close()
  }
}

/** Refuses a command that changes something (keys, pets) in `sqlite::memory:`, which would reach no service. */
function refuseThrowAwayStore (): void {
  if (loadConfig().DATABASE_URL !== 'sqlite::memory:') return
  throw new ConfigError('DATABASE_URL is sqlite::memory:, a throw-away store of the process that opens it: what this command stored there would reach no service; point DATABASE_URL at the service\'s store')
}

/**
 * Refuses to make a key that would be shown to no one: standard output sent to /dev/null (as Node
 * sends it when it starts with that descriptor closed, `keys create >&-`). The key would be stored,
 * working, and never seen.
 */
function refuseUnseenKey (): void {
  const discarded = statSync('/dev/null', { throwIfNoEntry: false })
  if (discarded === undefined) return
  const output = fstatSync(1)
  if (!output.isCharacterDevice() || output.rdev !== discarded.rdev) return
  throw new ConfigError('the standard output is /dev/null (or was closed): the new key would be shown to no one; nothing was made')
}

/**
 * Refuses a lifetime that cannot be before the store is opened: a moment already past only on SQLite,
 * whose clock is this machine's. A PostgreSQL store's is its server's (see Store's clock), read once
 * the store is open, where expiryOf reckons the expiry and refuses a moment past.
 */
function refuseLifetime (lifetime: LifetimeOptions): void {
  refuseImpossibleLifetime(lifetime, sqlitePathOf(loadConfig().DATABASE_URL) !== undefined ? Date.now() : undefined)
}

/** Says, on stderr, that a newer build has migrated the store (see migrateToLatest). */
function warnOfNewerMigrations (newer: string[]): void {
  if (newer.length > 0) console.error(`petstore: warning: ${newerMigrationsMessage(newer)}`)
}

function parseKeyId (text: string): bigint {
  const id = /^\d{1,19}$/.test(text) ? BigInt(text) : 0n
  if (id === 0n || id > INT64_MAX) throw new InvalidArgumentError('an API key id is an integer from 1 to 9223372036854775807 (see `keys list`)')
  return id
}

function examples (...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`
}

function buildProgram (): Command {
  const cmd = commandName()
  const program = new Command('petstore')
    .description('The pet store service and its administration.\nConfigured by environment variables: see the README.')
    .version(VERSION, '-V, --version', 'print the version')
    // A hint, not the help itself: twenty lines of it pushed the one line that says what is wrong out of sight.
    .showHelpAfterError('(add --help to see the usage)')
    .configureOutput({ outputError: (text, write) => { write(printableUsageError(text)) } })
    .exitOverride((error) => { process.exit(error.exitCode === 0 ? 0 : EXIT_USAGE) })
    .addHelpText('after', examples(
      `${cmd} serve                              # the API on :8080, SQLite in ./data`,
      `DATABASE_URL=postgres://localhost/pets ${cmd} migrate`,
      `${cmd} keys create --name "billing service"`,
      `${cmd} keys list --json`,
      `${cmd} keys revoke 3`,
      `${cmd} pets import pets.csv`,
      `${cmd} backup backups/petstore.db`
    ) + '\nExit codes: 0 done, 1 the command failed, 2 bad configuration or usage.')

  program.command('serve')
    .description('run the HTTP service (migrates the store first)')
    .addHelpText('after', examples(`${cmd} serve`, `PORT=9000 LOG_LEVEL=debug ${cmd} serve`))
    .action(async () => {
      // Loaded here so that the other commands start without the HTTP stack.
      const { serve } = await import('../server.js')
      await serve(loadConfig())
    })

  program.command('migrate')
    .description('bring the store schema to the latest version')
    .addHelpText('after', examples(`${cmd} migrate`))
    .action(async () => {
      const { applied, newer } = await withStore(({ db }) => migrateToLatest(db), { migrate: false })
      warnOfNewerMigrations(newer)
      // "Up to date" would tell a script reading stdout that the store and this build agree.
      console.log(applied.length > 0 ? `Applied: ${applied.join(', ')}` : newer.length > 0 ? 'Nothing applied: the store is ahead of this build (see the warning).' : 'The store is up to date.')
    })

  program.command('backup')
    .description('copy the SQLite store to a new file, as committed at one moment, while the service runs (PostgreSQL: use pg_dump)')
    .argument('<file>', 'the copy to make, a file that does not exist yet (its folder is made if need be)')
    .addHelpText('after', examples(`${cmd} backup backups/petstore-$(date +%F).db`) + `
A copy of the store's file alone (cp) lacks the commits still in its -wal file. To restore: stop the
service, move the store's file and its -wal and -shm files (if any) away, put the copy in its place,
start the service. Exit codes: 0 copied, 1 the copy failed, 2 no SQLite store to copy, the file exists or its folder cannot be made.`)
    .action(async (file: string) => {
      const { DATABASE_URL } = loadConfig()
      const storeFiles = sqliteStoreFiles(DATABASE_URL)
      const [path] = storeFiles
      if (path === undefined) {
        throw new ConfigError(sqlitePathOf(DATABASE_URL) !== undefined ?
          'DATABASE_URL is sqlite::memory:, a throw-away store of the process that opens it: there is nothing to back up; point DATABASE_URL at the service\'s store' :
          'DATABASE_URL names a PostgreSQL store: back it up with PostgreSQL\'s own tools (pg_dump, or a base backup and its WAL)')
      }
      if (!existsSync(path)) throw new ConfigError(`There is no store at ${path} (DATABASE_URL): nothing to back up`)
      if (existsSync(file)) throw new ConfigError(`${file} exists: a backup is written to a new file, never over one`)
      // SQLite's backup would trim it, and write another file than the one checked and named.
      if (file.trim() === '' || file !== file.trim()) throw new ConfigError(`The file name ${JSON.stringify(file)} is empty, or begins or ends with white space: give one without`)
      // Named as the store's -wal or -journal, a copy would be taken for the store's own and deleted (a stopped store's is no file).
      if (storeFiles.includes(resolve(file))) throw new ConfigError(`${file} is a name SQLite gives a file of the store itself: give the copy another`)
      const { pets } = await backupSqliteStore(path, file).catch((error: unknown) => {
        // Made during the copy, or a link to no file (which existsSync does not see): kept as it is.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        throw new ConfigError(`${file} exists (made during the copy, or a link to no file): it was kept, and the copy left as ${file}.partial`, { cause: error })
      })
      console.log(`Backed up ${printable(path)} to ${printable(file)}: ${pets} pets, as committed at one moment of the copy.`)
    })

  const keys = program.command('keys').description('manage API keys')
    .addHelpText('after', examples(`${cmd} keys create --name ci`, `${cmd} keys list`, `${cmd} keys rotate 2`, `${cmd} keys revoke 2`))

  keys.command('create')
    .description('create an API key and print it once, alone on the last line')
    .requiredOption('--name <name>', 'what the key is for, e.g. "billing service": 1 to 100 characters', parseKeyName)
    .option('--scope <scope>', `what the key may do, repeatable: ${SCOPES.join(', ')}, *:read (every read scope) or * (every scope, the default)`, collectScope)
    .option('--expires-in <duration>', 'the key stops working after this long: an integer and s, m, h or d (90d)', parseDurationOption)
    .option('--expires-at <time>', 'the key stops working at this RFC 3339 time (2027-03-01T00:00:00Z)', parseInstant)
    .addHelpText('after', examples(
      `KEY=$(${cmd} keys create --name ci | tail -n 1)`,
      `${cmd} keys create --name "shop front" --scope pets:read`,
      `${cmd} keys create --name billing --scope pets:read --scope orders:write --expires-in 90d`
    ) + `
Without --scope a key holds every scope. Without --expires-in or --expires-at it never expires,
unless API_KEY_DEFAULT_TTL sets a lifetime.`)
    .action(async ({ name, scope = [], ...lifetime }: { name: string, scope?: string[] } & LifetimeOptions) => {
      refuseThrowAwayStore()
      refuseUnseenKey()
      refuseLifetime(lifetime)
      const { key, hash, hint } = generateApiKey()
      const scopes = scopeList(scope)
      const { id, expiresAt } = await withStore(async ({ db, clock }) => {
        const now = clock.now()
        const expiresAt = expiryOf(lifetime, loadConfig().API_KEY_DEFAULT_TTL, now)
        return { id: await insertApiKey(db, { name, hash, hint, scopes, expiresAt }, stoppedClock(now)), expiresAt }
      })
      console.log(`Created API key ${id} (${name}) with the scopes ${scopes}${expiresAt === undefined ? '' : `, expiring at ${expiresAt.toISOString()}`}. It is shown only now; store it safely:`)
      console.log(key)
    })

  keys.command('rotate')
    .description('replace an API key: a new key with its name and scopes, printed once; the old one expires after the overlap')
    .argument('<id>', 'the key id, from `keys list`', parseKeyId)
    .addOption(new Option('--overlap <duration>', 'how long the old key keeps working: an integer and s, m, h or d, at least 1m').argParser(parseOverlap).default(parseOverlap('24h'), '24h'))
    .option('--expires-in <duration>', 'the new key stops working after this long (90d)', parseDurationOption)
    .option('--expires-at <time>', 'the new key stops working at this RFC 3339 time', parseInstant)
    .addHelpText('after', examples(`KEY=$(${cmd} keys rotate 2 | tail -n 1)`, `${cmd} keys rotate 2 --overlap 1h --expires-in 90d`) + `
The old key expires when the overlap ends (default 24h, at least 1m so that every server has seen it),
or sooner if it was to expire sooner; meanwhile both work, so clients can move to the new one. Without
--expires-in or --expires-at, the new key lives as long as the old one was to (from its creation to its
expiry: a key made to end at a date gives that length, not the date), or as keys create sets it for an
old key that never expired. A revoked or expired key cannot be rotated, nor one rotated already: rotate
its replacement.`)
    .action(async (id: bigint, { overlap, ...lifetime }: { overlap: number } & LifetimeOptions) => {
      refuseThrowAwayStore()
      refuseUnseenKey()
      refuseLifetime(lifetime)
      const { key, hash, hint } = generateApiKey()
      const defaultTtl = loadConfig().API_KEY_DEFAULT_TTL
      const rotated = await withStore(async ({ db, clock }) => {
        const now = clock.now()
        const expiry = (replacedLifetimeMs: number | undefined) => replacementExpiryOf(lifetime, defaultTtl, now, replacedLifetimeMs)
        return await rotateApiKey(db, id, { hash, hint, expiry }, overlap, stoppedClock(now))
      })
      console.log(`Rotated API key ${id}: key ${rotated.id} replaces it${rotated.expiresAt === undefined ? '' : `, expiring at ${rotated.expiresAt.toISOString()}`}, and key ${id} stops working at ${rotated.oldKeyExpiresAt}. The new key is shown only now; store it safely:`)
      console.log(key)
    })

  keys.command('list')
    .description('list API keys (never the keys themselves)')
    .option('--json', 'print a JSON array')
    .addHelpText('after', examples(`${cmd} keys list`, `${cmd} keys list --json | jq '.[] | select(.revoked or .expired | not)'`))
    .action(async ({ json }: { json?: boolean }) => {
      const { rows, now } = await withStore(async ({ db, clock }) => ({ rows: await findApiKeys(db), now: clock.now() }))
      const listed = rows.map((row) => ({
        id: Number(row.id),
        name: row.name,
        hint: row.key_hint,
        scopes: row.scopes.split(' '),
        createdAt: row.created_at,
        expiresAt: row.expires_at,
        lastUsedAt: row.last_used_at,
        rotatedFrom: row.rotated_from === null ? null : Number(row.rotated_from),
        expired: row.expires_at !== null && Date.parse(row.expires_at) <= now,
        revoked: row.revoked_at !== null,
        revokedAt: row.revoked_at
      }))
      if (json === true) console.log(JSON.stringify(listed, null, 2))
      else if (listed.length === 0) console.log('No API keys.')
      else {
        console.log(plainTable(['ID', 'NAME', 'KEY', 'SCOPES', 'CREATED', 'EXPIRES', 'LAST USED', 'ROTATED FROM', 'STATUS'], listed.map((key) => [
          String(key.id), key.name, key.hint, key.scopes.join(' '), key.createdAt, key.expiresAt ?? 'never', key.lastUsedAt ?? 'never',
          key.rotatedFrom === null ? '-' : String(key.rotatedFrom),
          key.revoked ? `revoked ${key.revokedAt}` : key.expired ? 'expired' : 'active'
        ])))
      }
    })

  keys.command('revoke')
    .description(`revoke an API key: running servers refuse it within ${DEFAULT_VERIFIER_OPTIONS.cacheTtlMs / 1000} seconds`)
    .argument('<id>', 'the key id, from `keys list`', parseKeyId)
    .addHelpText('after', examples(`${cmd} keys revoke 2`))
    .action(async (id: bigint) => {
      refuseThrowAwayStore()
      const revocation = await withStore(({ db, clock }) => revokeApiKey(db, id, clock))
      if (revocation === 'no such key') {
        console.error(`petstore: no API key with id ${id}`)
        process.exitCode = EXIT_FAILURE
        return
      }
      console.log(revocation === 'revoked' ? `Revoked API key ${id}.` : `API key ${id} was revoked already.`)
    })

  const pets = program.command('pets').description('manage pets in bulk')
    .addHelpText('after', examples(`${cmd} pets import pets.csv`))

  pets.command('import')
    .description('load pets from a JSON array or a CSV file (name,categoryId[,status]), each row validated as createPet validates a body')
    .argument('<file>', 'a .json file holding one array of pets, or a .csv file with a header row')
    .addOption(new Option('--format <format>', 'the file format, when its name does not end in .json or .csv').choices(['json', 'csv']))
    .option('--batch-size <rows>', 'rows stored per transaction (1 to 5000)', parseBatchSize, 500)
    .option('--dry-run', 'validate every row and report, storing nothing', false)
    .option('--errors <file>', 'write every rejected row to FILE, with its position and reason (CSV for a CSV import, JSON Lines for JSON)')
    .addHelpText('after', examples(
      `${cmd} pets import pets.json`,
      `${cmd} pets import export.txt --format csv --batch-size 1000`,
      `${cmd} pets import pets.csv --dry-run --errors rejected.csv`
    ) + `
Invalid rows are skipped. The first 20 are shown with their position ("line 10" in CSV, "element [3]
at line 1, column 212" in JSON) and reason; --errors FILE writes them all. A CSV report, once its rows
are fixed, imports as it is (its line and error columns are ignored); from a JSON Lines report,
jq -s 'map(.row)' rejected.jsonl > retry.json gives a file to import.
Each batch is one transaction: after a store failure nothing of that batch is stored, and later
batches are not tried. SIGTERM or Ctrl-C stops the import after the batch under way, saying which
rows were not stored; a second one stops it at once, saying how many pets were stored and naming
the batch under way, which may or may not be.
Exit codes: 0 every row stored (or valid, with --dry-run), 1 some rows rejected, the store failed or
the import was stopped, 2 the file cannot be read, is not UTF-8, or is not a JSON array or CSV with
a name,categoryId[,status] header.`)
    .action(async (file: string, options: PetsImportOptions) => {
      if (!options.dryRun) refuseThrowAwayStore()
      // The first SIGTERM or Ctrl-C ends the import after the batch under way, with its report; a second
      // one, at once, saying what was stored: the batch under way is stored or not as its commit was sent or not.
      const stop = new AbortController()
      const stopNow = new AbortController()
      const stopImport = () => { (stop.signal.aborted ? stopNow : stop).abort() }
      for (const signal of IMPORT_STOP_SIGNALS) process.on(signal, stopImport)
      try {
        const storeFiles = sqliteStoreFiles(loadConfig().DATABASE_URL)
        if (!await runPetsImport(withStore, file, { ...options, storeFiles }, stop.signal, stopNow.signal)) process.exitCode = EXIT_FAILURE
        // Stopped, what the import may have left under way (the batch, a pipe's copy) ends with the process.
        if (stop.signal.aborted) process.exit()
      } finally {
        for (const signal of IMPORT_STOP_SIGNALS) process.removeListener(signal, stopImport)
      }
    })

  return program
}

function parseBatchSize (text: string): number {
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1 || Number(text) > 5000) throw new InvalidArgumentError('a batch size is a whole number from 1 to 5000')
  return Number(text)
}

/**
 * Commander's error, `message\n`, as one printable line: a line break in it comes from a value it
 * quotes, but for the line of its own suggestion. An API key it quotes (`keys revoke` given the key
 * rather than its id) is redacted: a terminal's output goes on to CI logs and screen shares.
 */
function printableUsageError (text: string): string {
  const [message = '', suggestion] = withoutSecrets(text.slice(0, -1)).split(/\n(?=\(Did you mean [^\n]*\?\)$)/)
  return `${printable(message)}${suggestion === undefined ? '' : `\n${printable(suggestion)}`}\n`
}

/** An error's lines as a terminal should show them: it may quote what was typed or read (a name, a path). */
function printableLines (text: string): string {
  return text.split('\n').map(printable).join('\n')
}

printProcessWarnings() // serve logs them instead (see logProcessWarnings)

// Node drops what cannot be written to stdout (a full disk, /dev/full) without a word and exits 0:
// `KEY=$(petstore keys create ...)` then got nothing, the key stored but never shown.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  console.error(`petstore: the standard output cannot be written (${error.code ?? error.message}): what this command printed is lost` +
    ' (a key made by keys create or rotate is stored, unseen: find it with keys list, and revoke it)')
  process.exitCode = EXIT_FAILURE
})

try {
  await buildProgram().parseAsync(process.argv)
} catch (error) {
  if (error instanceof ConfigError || error instanceof ImportUsageError || error instanceof InvalidArgumentError) {
    console.error(`petstore: ${printableLines(error.message)}`)
    process.exit(EXIT_USAGE)
  }
  console.error(`petstore: ${printableLines(messageOf(error))}`)
  process.exit(EXIT_FAILURE)
}
