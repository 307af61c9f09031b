import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { appendFileSync, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { promisify } from 'node:util'
import SqliteDatabase from 'better-sqlite3'
import { parse as parseCsv } from 'csv-parse/sync'
import { sql } from 'kysely'
import { generateApiKey } from '../../src/api-keys/api-key.service.js'
import { runPetsImport } from '../../src/cli/pets-import.js'
import { isPostgres } from '../../src/db/dialect.js'
import type { Db } from '../../src/db/database.js'
import { createTestStore, forEachStore, tempDir } from '../helper.js'
import { CLI, runCli } from '../process.js'

async function storedPets (db: Db): Promise<Array<[string, string, string]>> {
  const rows = await db.selectFrom('pets').select(['name', 'category_id', 'status']).orderBy('id').execute()
  return rows.map((row) => [row.name, String(row.category_id), row.status])
}

forEachStore((store) => {
  async function setUp (t: Parameters<typeof tempDir>[0]) {
    const { db, databaseUrl } = await createTestStore(t, store)
    const dir = tempDir(t)
    const file = (name: string, text: string) => {
      const path = join(dir, name)
      writeFileSync(path, text)
      return path
    }
    return { db, env: { DATABASE_URL: databaseUrl }, file }
  }

  test('a CSV import stores the valid rows, and reports each rejected one by line with the API\'s reason', async (t) => {
    const { db, env, file } = await setUp(t)
    const csv = file('pets.csv', [
      'name,categoryId,status',
      'Rex,3,',
      '"Two\nlines",4,sold', // lines 3-4
      'Tom,x,available',
      ',5,',
      'Big,9223372036854775807,pending',
      'Huge,9223372036854775808,pending',
      'Odd,1,lost',
      'Extra,1,sold,more',
      'Kitty,2'
    ].join('\n') + '\n')
    const result = await runCli(['pets', 'import', csv], env)
    assert.equal(result.code, 1, result.stderr)
    const lines = result.stdout.split('\n')
    assert.ok(lines.includes('line 5: `categoryId` must be an integer from 1 to 9223372036854775807'), result.stdout)
    assert.ok(lines.includes('line 6: `name` must be 1 to 100 characters once whitespace at both ends is trimmed, in well-formed Unicode without U+0000'))
    assert.ok(lines.includes('line 8: `categoryId` must be an integer from 1 to 9223372036854775807'))
    assert.ok(lines.includes('line 9: `status` must be one of available, pending, sold'))
    assert.ok(lines.includes('line 10: The row has 4 fields; the header names 3'))
    assert.ok(lines.includes('Stored: 4 pets.'), result.stdout)
    assert.ok(lines.includes('Rejected: 5 rows.'))
    assert.deepEqual(await storedPets(db), [
      ['Rex', '3', 'available'],
      ['Two\nlines', '4', 'sold'],
      ['Big', '9223372036854775807', 'pending'],
      ['Kitty', '2', 'available']
    ])
  })

  test('a JSON import reports rows by their index, line and column; exit 0 when all are stored', async (t) => {
    const { db, env, file } = await setUp(t)
    const json = file('pets.json', '[\n  {\n    "name": "Rex",\n    "categoryId": 3\n  },\n  {"name": "Tom, \\"the [cat]\\"", "categoryId": 9223372036854775807, "status": "sold"}\n]\n')
    const ok = await runCli(['pets', 'import', json, '--batch-size', '1'], env)
    assert.equal(ok.code, 0, ok.stdout + ok.stderr)
    assert.match(ok.stdout, /^Stored: 2 pets\.$/m)
    assert.deepEqual(await storedPets(db), [['Rex', '3', 'available'], ['Tom, "the [cat]"', '9223372036854775807', 'sold']])
    if (isPostgres(db)) {
      // The planner knows the table's new size at once (pg_stats is filled by ANALYZE).
      const { rows } = await sql<{ columns: string }>`select count(*) as columns from pg_stats where tablename = 'pets'`.execute(db)
      assert.ok(Number(rows[0]!.columns) > 0, 'pets analyzed after the import')
    }

    // A member named twice counts as in a request body: the last one, as JSON.parse reads it.
    const bad = file('bad.json', '[\n  {"name": "A", "categoryId": 1},\n  "Rex",\n  {"name": "B", "categoryId": 1, "color": "red"},\n  {"name": "C", "categoryId": 1},\n  {"name": "D", "categoryId": 12345678901234567, "name": "E"}\n]')
    const result = await runCli(['pets', 'import', bad], env)
    assert.equal(result.code, 1)
    assert.match(result.stdout, /^element \[1\] at line 3, column 3: The row must be an object$/m)
    assert.match(result.stdout, /^element \[2\] at line 4, column 3: The row has an unknown field `color`$/m)
    assert.match(result.stdout, /^Importing 5 rows from .*bad\.json \(JSON\), 500 per transaction\.$/m, 'the survey counts every element, readable or not')
    assert.match(result.stdout, /^Stored: 3 pets\.$/m)
    assert.deepEqual((await storedPets(db)).slice(2).map(([name, categoryId]) => `${name} ${categoryId}`), ['A 1', 'C 1', 'E 12345678901234567'])
  })

  test('a batch of more rows than one INSERT takes (1,000) is stored whole and in order', async (t) => {
    const { db, env, file } = await setUp(t)
    const rows = Array.from({ length: 2500 }, (_, i) => `Pet ${i},${1 + (i % 7)}`)
    const result = await runCli(['pets', 'import', file('many.csv', `name,categoryId\n${rows.join('\n')}\n`), '--batch-size', '5000'], env)
    assert.equal(result.code, 0, result.stdout + result.stderr)
    assert.deepEqual((await storedPets(db)).map(([name, categoryId]) => `${name},${categoryId}`), rows)
  })

  test('--dry-run validates and reports, storing nothing', async (t) => {
    const { db, env, file } = await setUp(t)
    const csv = file('pets.csv', 'name,categoryId\nRex,3\nTom,0\n')
    const result = await runCli(['pets', 'import', csv, '--dry-run'], env)
    assert.equal(result.code, 1)
    assert.match(result.stdout, /^line 3: `categoryId` must be an integer/m)
    assert.match(result.stdout, /^Valid, not stored \(dry run\): 1 pet\.$/m)
    assert.deepEqual(await storedPets(db), [])
    const valid = await runCli(['pets', 'import', file('ok.csv', 'name,categoryId\nRex,3\n'), '--dry-run'], env)
    assert.equal(valid.code, 0)
    assert.deepEqual(await storedPets(db), [])
  })

  test('a store failure half-way leaves no partial batch, and the report says which rows were not stored', async (t) => {
    const { db, env, file } = await setUp(t)
    // A fault injected in the store itself: inserting the pet named "boom" fails.
    if (isPostgres(db)) {
      await sql`create function refuse_boom() returns trigger language plpgsql as $$ begin raise exception 'injected store failure'; end $$`.execute(db)
      await sql`create trigger refuse_boom before insert on pets for each row when (new.name = 'boom') execute function refuse_boom()`.execute(db)
    } else {
      await sql`create trigger refuse_boom before insert on pets when new.name = 'boom' begin select raise(abort, 'injected store failure'); end`.execute(db)
    }
    const names = ['a', 'b', 'c', 'd', 'boom', 'f', 'g', 'h']
    const csv = file('pets.csv', ['name,categoryId', ...names.map((name) => `${name},1`), 'bad,0'].join('\n'))
    const result = await runCli(['pets', 'import', csv, '--batch-size', '3'], env)
    assert.equal(result.code, 1)
    assert.match(result.stdout, /^Stored: 3 pets\.$/m)
    assert.match(result.stdout, /^Store failure: the batch from line 5 to line 7 was not stored: .*injected store failure/m)
    assert.match(result.stdout, /^Not tried after the failure: 2 valid rows, from line 8 to the end\.$/m)
    assert.match(result.stdout, /^line 10: `categoryId` must be/m, 'rows after the failure are still checked')
    assert.deepEqual((await storedPets(db)).map(([name]) => name), ['a', 'b', 'c'])
  })
})

/** A CSV file of seven pets, a to g, on lines 2 to 8. */
function sevenPetsCsv (t: TestContext): string {
  const file = join(tempDir(t), 'pets.csv')
  writeFileSync(file, ['name,categoryId', ...['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((name) => `${name},1`)].join('\n'))
  return file
}

test('an import stopped (SIGTERM, Ctrl-C) ends after the batch under way, reads no further, and says what was not stored', async (t) => {
  const { store } = await createTestStore(t)
  const file = sevenPetsCsv(t)
  // A row the import would reject, after the stop: the rest of a file (millions of rows) is not read.
  appendFileSync(file, '\nbad,0')
  const stop = new AbortController()
  // Stopped while the second batch is being stored: it is stored whole, and the third is not tried.
  let batches = 0
  const pets = Object.create(store.pets) as typeof store.pets
  pets.insertMany = async (batch) => {
    if (++batches === 2) stop.abort()
    return await store.pets.insertMany(batch)
  }
  const printed: string[] = []
  t.mock.method(console, 'log', (line: string) => { printed.push(line) })
  const done = await runPetsImport(async (work) => await work({ ...store, pets }), file, { batchSize: 3, dryRun: false }, stop.signal)
  assert.equal(done, false)
  assert.ok(printed.includes('Stored: 6 pets.'), printed.join('\n'))
  assert.ok(printed.includes('Stopped (SIGTERM or Ctrl-C) after the batch under way: 2 rows not tried, from line 8 to the end.'), printed.join('\n'))
  assert.ok(!printed.some((line) => line.startsWith('line 9') || line.startsWith('Rejected')), printed.join('\n'))
  assert.deepEqual((await storedPets(store.db)).map(([name]) => name), ['a', 'b', 'c', 'd', 'e', 'f'])
})

test('a batch whose answer is lost with the connection is reported as perhaps stored, not as not stored', async (t) => {
  const { store } = await createTestStore(t)
  const file = sevenPetsCsv(t)
  // The second batch commits, and its answer is lost on the way back, as when PostgreSQL stops
  // answering during the commit: the store cannot tell whether it was stored.
  let batches = 0
  const pets = Object.create(store.pets) as typeof store.pets
  pets.insertMany = async (batch) => {
    const stored = await store.pets.insertMany(batch)
    if (++batches === 2) throw new Error('Connection terminated unexpectedly')
    return stored
  }
  const printed: string[] = []
  t.mock.method(console, 'log', (line: string) => { printed.push(line) })
  const done = await runPetsImport(async (work) => await work({ ...store, pets }), file, { batchSize: 3, dryRun: false }, new AbortController().signal)
  assert.equal(done, false)
  assert.ok(printed.includes('Stored: 3 pets.'), printed.join('\n'))
  assert.ok(printed.includes('Store failure: the connection to the store was lost during the batch from line 5 to line 7, which may or may not be stored ' +
    '(Connection terminated unexpectedly): look for its pets in the store before importing those lines again.'), printed.join('\n'))
  assert.deepEqual((await storedPets(store.db)).map(([name]) => name), ['a', 'b', 'c', 'd', 'e', 'f'], 'as here, where it was')
})

test('--errors FILE that cannot be written (a full disk) stops the import with its report: what was stored, and from where nothing was', async (t) => {
  const { store } = await createTestStore(t)
  const dir = tempDir(t)
  // The second batch (lines 3 and 4) has the first rejected row: it is the first thing written to a JSON Lines report.
  const file = join(dir, 'pets.json')
  writeFileSync(file, '[{"name":"a","categoryId":1},\n{"name":"b","categoryId":1},\n{"name":"c","categoryId":1},\n{"name":"bad","categoryId":0},\n{"name":"e","categoryId":1}]')
  const printed: string[] = []
  t.mock.method(console, 'log', (line: string) => { printed.push(line) })
  const done = await runPetsImport(async (work) => await work(store), file, { batchSize: 2, dryRun: false, errors: '/dev/full' })
  assert.equal(done, false)
  // It ended with a bare "petstore: ENOSPC: no space left on device, write", naming neither the file nor what was stored.
  assert.ok(printed.includes('Stored: 2 pets.'), printed.join('\n'))
  assert.equal(printed.at(-1), '--errors /dev/full cannot be written (ENOSPC: no space left on device, write): the import stopped there; ' +
  'nothing from element [2] at line 3, column 1 on was gone through.', printed.join('\n'))
  assert.ok(!printed.some((line) => line.startsWith('element [3]')), 'a rejection not written is not shown either')
  assert.deepEqual((await storedPets(store.db)).map(([name]) => name), ['a', 'b'])
  // A last batch of rows that cannot be read at all (no readable row to name it by).
  writeFileSync(file, '[{"name":"f","categoryId":1},\n{"name":"g","categoryId":1},\n{"__proto__":{}}]')
  printed.length = 0
  assert.equal(await runPetsImport(async (work) => await work(store), file, { batchSize: 2, dryRun: false, errors: '/dev/full' }), false)
  assert.equal(printed.at(-1), '--errors /dev/full cannot be written (ENOSPC: no space left on device, write): the import stopped there; ' +
  'nothing from element [2] at line 3, column 1 on was gone through.', printed.join('\n'))
  assert.deepEqual((await storedPets(store.db)).map(([name]) => name), ['a', 'b', 'f', 'g'])
  // A CSV report's header is written first: nothing is stored.
  const csv = sevenPetsCsv(t)
  printed.length = 0
  assert.equal(await runPetsImport(async (work) => await work(store), csv, { batchSize: 2, dryRun: false, errors: '/dev/full' }), false)
  assert.equal(printed.at(-1), '--errors /dev/full cannot be written (ENOSPC: no space left on device, write). Nothing stored.', printed.join('\n'))
  assert.equal((await storedPets(store.db)).length, 4)
})

for (const [ending, batchEnds] of [['never ends (a frozen store)', false], ['commits after the signals', true]] as const) {
  test(`a second SIGTERM or Ctrl-C stops an import at once, without waiting for the batch under way, which ${ending}, and says what was stored and what may be`, async (t) => {
    const { store } = await createTestStore(t)
    const file = sevenPetsCsv(t)
    const stop = new AbortController()
    const stopNow = new AbortController()
    // Both signals come while the second batch is under way: whether it will be stored cannot be
    // told then (it was reported as not stored, and 5,000 pets were imported twice).
    let batches = 0
    let underWay: Promise<unknown> = Promise.resolve()
    const pets = Object.create(store.pets) as typeof store.pets
    pets.insertMany = async (batch) => {
      if (++batches < 2) return await store.pets.insertMany(batch)
      stop.abort()
      stopNow.abort()
      const storing = batchEnds ? store.pets.insertMany(batch) : new Promise<never>(() => {})
      if (batchEnds) underWay = storing
      return await storing
    }
    const printed: string[] = []
    t.mock.method(console, 'log', (line: string) => { printed.push(line) })
    const done = await runPetsImport(async (work) => await work({ ...store, pets }), file, { batchSize: 3, dryRun: false }, stop.signal, stopNow.signal)
    assert.equal(done, false)
    assert.equal(printed.at(-1), 'Stopped at once (a second SIGTERM or Ctrl-C): 3 pets stored; the batch under way, from line 5 to line 7, ' +
    'may or may not be stored: look for its pets in the store before importing those lines again; nothing after it is.', printed.join('\n'))
    await underWay
    assert.deepEqual((await storedPets(store.db)).map(([name]) => name), batchEnds ? ['a', 'b', 'c', 'd', 'e', 'f'] : ['a', 'b', 'c'])
  })
}

test('an unusable file is one clear line and exit 2', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const cases: Array<[string, string, RegExp]> = [
    ['object.json', '{"name": "Rex"}', /must hold one array of pets/],
    ['broken.json', '[{"name": ', /is not valid JSON: the text ends before the JSON value is complete at line 1, column 11$/m],
    ['unclosed.json', '[\n  {"name": "Rex", "categoryId": 1}\n  {"name": "Tom"}\n]', /is not valid JSON: unexpected "\{" where a "," or a closing bracket was expected at line 3, column 3$/m],
    ['header.csv', 'nom,categoryId\nRex,1\n', /the CSV header must name the columns name, categoryId and optionally status, .* \(got nom,categoryId\)/],
    // Read as they were, the last of two name columns would have named every pet.
    ['twice.csv', 'name,categoryId,name\nRex,1,Tom\n', /the CSV header names the column name more than once \(got name,categoryId,name\)$/m],
    // The file's own text, printed to a terminal: its escape sequences are shown, not run.
    ['escape.csv', 'name,\u001b[31mcat\nRex,1\n', /\(got name,\\u001b\[31mcat\)$/m],
    // A key pasted where a column's name goes is not printed, as the API and a JSON file's field names do not.
    ['key.csv', `name,categoryId,${generateApiKey().key}\nRex,1,x\n`, /\(got name,categoryId,ps_\[redacted\]\)$/m],
    ['empty.csv', '\n\n', /the file has no CSV header: its first line must name the columns name, categoryId and optionally status$/m],
    ['pets.txt', 'name,categoryId\n', /cannot tell the format of .*pets\.txt/]
  ]
  // Read as UTF-8 regardless, a Latin-1 export's accented letters were stored as U+FFFD, and the import said it succeeded.
  const notUtf8: Array<[string, Buffer, RegExp]> = [
    ['latin1.csv', Buffer.from('name,categoryId\nCaf\xe9,77\n', 'latin1'), /is not UTF-8: the bytes at line 2, column 4 \(byte 19\) are not; save it as UTF-8$/m],
    ['latin1.json', Buffer.concat([Buffer.from('[\n{"name":"x'), Buffer.from([0xc3, 0x28]), Buffer.from('","categoryId":1}]')]), /is not UTF-8: the bytes at line 2, column 11 \(byte 12\) are not; save it as UTF-8$/m]
  ]
  for (const [name, text, message] of [...cases, ...notUtf8]) {
    writeFileSync(join(dir, name), text)
    const result = await runCli(['pets', 'import', join(dir, name)], env)
    assert.equal(result.code, 2, name)
    assert.match(result.stderr, message)
    assert.equal(result.stderr.trim().split('\n').length, 1, `one line: ${result.stderr}`)
  }
  const missing = await runCli(['pets', 'import', join(dir, 'missing.csv')], env)
  assert.equal(missing.code, 2)
  assert.match(missing.stderr, /cannot read .*missing\.csv: ENOENT/)
})

test('a CSV row short of fields is refused naming each required field it lacks', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const file = join(dir, 'short.csv')
  writeFileSync(file, 'name,categoryId\nonlyname\n')
  const result = await runCli(['pets', 'import', file, '--dry-run'], env)
  assert.equal(result.code, 1)
  assert.match(result.stdout, /^line 2: The row is missing the required field `categoryId`$/m)
})

test('a quote inside a CSV field is kept as text, and the progress counts every row, the unreadable ones too', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const file = join(dir, 'quotes.csv')
  // A stray quote made its row unreadable and its text was lost: the rejected row held `a"` alone,
  // and `"a"x` took every row after it into one unclosed quoted field.
  writeFileSync(file, 'name,categoryId\na"b,1\n"a"x,1\nok,2\nx,1,extra\n')
  const result = await runCli(['pets', 'import', file, '--dry-run'], env)
  assert.equal(result.code, 1, result.stdout + result.stderr)
  assert.match(result.stdout, /^Checking 4 rows /m)
  assert.match(result.stdout, /^Valid, not stored \(dry run\): 3 pets\.$/m)
  assert.match(result.stdout, /^line 5: The row has 3 fields; the header names 2$/m)
  assert.match(result.stderr, /^Checked: 4\/4 rows \(100%\)$/m)
})

test('--errors naming the file being imported is refused before anything is written: the file is left whole', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const text = '[{"name":"Rex","categoryId":1},{"name":"","categoryId":1}]'
  const pets = join(dir, 'pets.json')
  writeFileSync(pets, text)
  for (const errors of [pets, join(dir, '.', 'pets.json')]) {
    const result = await runCli(['pets', 'import', pets, '--errors', errors], env)
    assert.equal(result.code, 2, result.stdout)
    assert.match(result.stderr, /--errors names the file being imported/)
    assert.equal(readFileSync(pets, 'utf8'), text)
  }
})

test('--errors naming a file of the SQLite store, or its write-ahead log, is refused before anything is written: the store keeps every pet', async (t) => {
  const dir = tempDir(t)
  const store = join(dir, 'petstore.db')
  const env = { DATABASE_URL: `sqlite:${store}` }
  const pets = join(dir, 'pets.json')
  writeFileSync(pets, '[{"name":"Rex","categoryId":1}]')
  assert.equal((await runCli(['pets', 'import', pets], env)).code, 0)
  writeFileSync(pets, '[{"name":"","categoryId":1}]')
  for (const errors of [store, join(dir, '.', 'petstore.db'), `${store}-wal`, `${store}-shm`]) {
    const result = await runCli(['pets', 'import', pets, '--errors', errors], env)
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, /^petstore: --errors names a file of the store \(.*petstore\.db(-wal|-shm)?\): writing it would destroy the store; name another file$/m)
  }
  // A store named by a link: SQLite names its log after the file the link leads to.
  const link = join(dir, 'link.db')
  symlinkSync(store, link)
  for (const errors of [`${store}-wal`, join(dir, 'link.db')]) {
    const result = await runCli(['pets', 'import', pets, '--errors', errors], { DATABASE_URL: `sqlite:${link}` })
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, /--errors names a file of the store/)
  }
  // A link to a file of the store that does not exist yet (its rollback journal), through another
  // link: written, it left a journal that locked every command out of the store.
  symlinkSync(`${store}-journal`, join(dir, 'to-journal'))
  symlinkSync('to-journal', join(dir, 'to-link'))
  // Through a linked folder, with `..`: read from the folder the link is really in.
  mkdirSync(join(dir, 'real', 'deep'), { recursive: true })
  symlinkSync(join(dir, 'real', 'deep'), join(dir, 'sub'))
  symlinkSync('../../petstore.db-journal', join(dir, 'real', 'deep', 'up'))
  for (const errors of [join(dir, 'to-journal'), join(dir, 'to-link'), join(dir, 'sub', 'up')]) {
    const result = await runCli(['pets', 'import', pets, '--errors', errors], env)
    assert.equal(result.code, 2, result.stderr)
    assert.match(result.stderr, /--errors names a file of the store \(.*petstore\.db-journal\)/)
  }
  assert.equal(existsSync(`${store}-journal`), false)
  const opened = new SqliteDatabase(store, { readonly: true })
  t.after(() => opened.close())
  assert.deepEqual(opened.prepare('select name from pets').all(), [{ name: 'Rex' }])
})

test('an import while another process holds the SQLite store\'s write lock is one line that says the store could not be used, exit 1, storing nothing', async (t) => {
  const dir = tempDir(t)
  const store = join(dir, 'petstore.db')
  const env = { DATABASE_URL: `sqlite:${store}` }
  const pets = join(dir, 'pets.json')
  writeFileSync(pets, '[{"name":"Rex","categoryId":1}]')
  assert.equal((await runCli(['migrate'], env)).code, 0)
  const holder = new SqliteDatabase(store)
  t.after(() => holder.close())
  holder.exec('begin exclusive')
  const result = await runCli(['pets', 'import', pets], env)
  assert.equal(result.code, 1, result.stderr)
  // Not "Migration failed": there was nothing to migrate.
  assert.equal(result.stderr, 'petstore: The store could not be brought up to date, as every command does first (database is locked): nothing was changed\n')
  holder.exec('rollback')
  assert.deepEqual(holder.prepare('select count(*) as pets from pets').get(), { pets: 0 })
})

test('file names are printed as the errors print them: a control character in one (an escape sequence) is shown, not sent to the terminal', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const pets = join(dir, 'esc\u001b[31mred\u0007.csv')
  writeFileSync(pets, 'name,categoryId\nRex,1\nTom,x\n')
  const errors = join(dir, 'rejected\u001b[2J.csv')
  const imported = await runCli(['pets', 'import', pets, '--errors', errors], env)
  assert.equal(imported.code, 1, imported.stdout)
  assert.match(imported.stdout, /^Importing 2 rows from .*esc\\u001b\[31mred\\u0007\.csv \(CSV\)/m)
  assert.match(imported.stdout, /^Rejected: 1 row, written to .*rejected\\u001b\[2J\.csv\.$/m)
  const copy = join(dir, 'copy\u001b]0;title\u0007.db')
  const backedUp = await runCli(['backup', copy], env)
  assert.equal(backedUp.code, 0, backedUp.stderr)
  assert.match(backedUp.stdout, /to .*copy\\u001b\]0;title\\u0007\.db: 1 pets/)
  for (const output of [imported.stdout, backedUp.stdout]) assert.ok(!output.includes('\u001b') && !output.includes('\u0007'), output)
})

test('a JSON file that starts with a UTF-8 byte order mark is read as without it', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const pets = join(dir, 'pets.json')
  writeFileSync(pets, '\uFEFF[{"name":"Rex","categoryId":1},{"name":"Tom","categoryId":2}]')
  const result = await runCli(['pets', 'import', pets], env)
  assert.equal(result.code, 0, result.stdout)
  assert.match(result.stdout, /^Stored: 2 pets\.$/m)
})

test('a JSON array on one line: each rejection names its element, line and column; 20 are shown and --errors writes all as JSON Lines', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  // Every third element is refused; names with é (two bytes, one character) make bytes and columns differ.
  const elements = Array.from({ length: 60 }, (_, i) => i % 3 === 0 ? `{"name":"Chat é ${i}","categoryId":"x"}` : `{"name":"Chat é ${i}","categoryId":${i + 1}}`)
  elements[1] = '{"name":"Pollution","categoryId":9223372036854775807,"__proto__":{"admin":true}}'
  const text = `[${elements.join(',')}]`
  const file = join(dir, 'pets.json')
  writeFileSync(file, text)
  const errors = join(dir, 'rejected.jsonl')

  const result = await runCli(['pets', 'import', file, '--errors', errors], env)
  assert.equal(result.code, 1)
  const shown = result.stdout.split('\n').filter((line) => line.startsWith('element '))
  assert.equal(shown.length, 20, result.stdout)
  assert.equal(shown[0], 'element [0] at line 1, column 2: `categoryId` must be an integer from 1 to 9223372036854775807')
  assert.match(shown[1]!, /^element \[1\] at line 1, column \d+: The keys `__proto__` and `constructor.prototype` are refused/)
  assert.ok(result.stdout.includes(`… and 1 more rejected row, all in ${errors}.\n`), result.stdout)
  assert.match(result.stdout, /^Stored: 39 pets\.$/m)
  assert.match(result.stdout, /^Rejected: 21 rows, written to .*rejected\.jsonl\.$/m)

  const reported = readFileSync(errors, 'utf8').trimEnd().split('\n')
  assert.equal(reported.length, 21)
  for (const line of reported) {
    const { index, line: lineNumber, column, error } = JSON.parse(line)
    assert.equal(lineNumber, 1)
    assert.ok(text.slice(column - 1).startsWith(elements[index]!), `column ${column} is where element ${index} starts`)
    assert.ok(line.endsWith(`"row":${elements[index]!}}`), 'the element as the file wrote it, exact int64 included')
    assert.equal(typeof error, 'string')
  }
})

test('--errors writes every rejected CSV row with its line and reason; once fixed, the report imports as it is', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const rows = Array.from({ length: 30 }, (_, i) => i < 25 ? `Bad ${i},0` : `Good ${i},1`)
  const file = join(dir, 'pets.csv')
  writeFileSync(file, `name,categoryId\n${rows.join('\n')}\nToo,1,sold,many\n`)

  const hint = await runCli(['pets', 'import', file, '--dry-run'], env)
  assert.ok(hint.stdout.includes('… and 6 more rejected rows; --errors FILE writes them all.\n'), hint.stdout)
  assert.equal(hint.stdout.split('\n').filter((line) => line.startsWith('line ')).length, 20)

  const errors = join(dir, 'rejected.csv')
  const result = await runCli(['pets', 'import', file, '--errors', errors], env)
  assert.equal(result.code, 1)
  assert.match(result.stdout, /^Stored: 5 pets\.$/m)
  const [header, ...records] = parseCsv(readFileSync(errors), { relax_column_count: true }) as string[][]
  assert.deepEqual(header, ['line', 'error', 'name', 'categoryId'])
  assert.equal(records.length, 26)
  assert.deepEqual(records[0], ['2', '`categoryId` must be an integer from 1 to 9223372036854775807', 'Bad 0', '0'])
  assert.deepEqual(records[25], ['32', 'The row has 4 fields; the header names 2', 'Too', '1', 'sold', 'many'], 'extra fields are kept until fixed')

  // The fix: each row's categoryId, and the row with too many fields cut to two.
  const fixed = [header!, ...records.map(([line, error, name]) => [line!, error!, name!, '7'])].map((fields) => fields.join(',')).join('\n')
  writeFileSync(errors, fixed.replaceAll('`', ''))
  const retry = await runCli(['pets', 'import', errors], env)
  assert.equal(retry.code, 0, retry.stdout + retry.stderr)
  assert.match(retry.stdout, /^Stored: 26 pets\.$/m)
})

test('in a CSV file of mixed line ends, each line break ends a row, as an editor shows it: no CR is kept in a value', async (t) => {
  const { store } = await createTestStore(t)
  const dir = tempDir(t)
  t.mock.method(console, 'log', () => {})
  // The header's line break was taken for every record: `Rex\r` was stored, `sold\r` refused as a
  // status, and a CRLF file's bare CR made two rows one of three fields.
  const cases: Array<[string, string[]]> = [
    ['categoryId,name\n1,Rex\r\n2,Max\r\n', ['Rex', 'Max']],
    ['name,categoryId,status\nA,1,sold\r\nB,2,available\r\n', ['A', 'B']],
    ['name,categoryId\r\nC,1\rD,2\r\nE,3\nF,4\n', ['C', 'D', 'E', 'F']],
    // Quoted, a line break is the field's own.
    ['name,categoryId\n"G\rH",1\r"I\r\nJ",2\n', ['G\rH', 'I\r\nJ']]
  ]
  let stored: string[] = []
  for (const [i, [text, names]] of cases.entries()) {
    const file = join(dir, `mixed-${i}.csv`)
    writeFileSync(file, text)
    assert.equal(await runPetsImport(async (work) => await work(store), file, { batchSize: 500, dryRun: false }), true, JSON.stringify(text))
    stored = [...stored, ...names]
    assert.deepEqual((await storedPets(store.db)).map(([name]) => name), stored, JSON.stringify(text))
  }
})

test('CSV lines are counted as an editor counts them: blank lines, CRLF inside a quoted field and a bare CR each move the lines after them', async (t) => {
  const { store } = await createTestStore(t)
  const dir = tempDir(t)
  t.mock.method(console, 'log', () => {})
  const cases: Array<[string, string, number[]]> = [
    // Blank lines before a refused row: csv-parse gave their newlines to the row's text.
    ['blank-lines.csv', 'name,categoryId\nRex,1\n\n\nBad,x\nOk,2\n\n\nWorse,y\n', [5, 9]],
    ['crlf.csv', 'name,categoryId\r\n"Multi\r\nline",1\r\n\r\nBad,x\r\n"Two\r\nlines",z\r\n', [5, 6]],
    ['blank-before-header.csv', '\n\nname,categoryId\nBad,x\n', [4]],
    ['bare-cr.csv', 'name,categoryId\nA,1\rB,2\nBad,x\rWorse,y\n', [4, 5]]
  ]
  for (const [name, text, lines] of cases) {
    const file = join(dir, name)
    writeFileSync(file, text)
    const errors = join(dir, `${name}.errors.csv`)
    assert.equal(await runPetsImport(async (work) => await work(store), file, { batchSize: 500, dryRun: false, errors }), false)
    const [header, ...records] = parseCsv(readFileSync(errors), { relax_column_count: true }) as string[][]
    assert.deepEqual(header, ['line', 'error', 'name', 'categoryId'], name)
    assert.deepEqual(records.map(([line]) => Number(line)), lines, name)
    for (const [line, , petName] of records) {
      const rowText = text.split(/\r\n|\r|\n/)[Number(line) - 1]!
      assert.ok(rowText.startsWith(petName!.split(/\r\n|\r|\n/)[0]!) || rowText.startsWith(`"${petName!.split(/\r\n|\r|\n/)[0]!}`), `${name}: line ${line} holds ${petName}`)
    }
  }
})
test('progress: plain lines when not on a terminal, a bar on one', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const csv = join(dir, 'pets.csv')
  writeFileSync(csv, ['name,categoryId', ...Array.from({ length: 300 }, (_, i) => `Pet ${i},1`)].join('\n'))
  const plain = await runCli(['pets', 'import', csv, '--batch-size', '100'], env)
  assert.equal(plain.code, 0)
  assert.match(plain.stderr, /^Processed: 300\/300 rows \(100%\)$/m)
  assert.ok(!plain.stderr.includes('\r'), 'no terminal control in a log')

  // `script` runs the command on a pseudo-terminal, as a user's shell would.
  const command = [process.execPath, ...CLI, 'pets', 'import', csv, '--batch-size', '100'].map((arg) => `'${arg}'`).join(' ')
  const { stdout } = await promisify(execFile)('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...env, TERM: 'xterm' } })
  assert.match(stdout, /Processed \[\u2588+\] 100% \| 300\/300 rows/)
})

test('a file is read in chunks: elements, characters and quoted fields cut across them are read whole, at their exact places', async (t) => {
  const { store } = await createTestStore(t)
  const dir = tempDir(t)
  t.mock.method(console, 'log', () => {})
  // Some 300 KiB: elements of two- and four-byte characters cut across every 64 KiB read; every
  // seventh element refused; a string element and a long name each spanning a cut.
  const elements = Array.from({ length: 3000 }, (_, i) => i % 7 === 3 ?
    `{"name": "Chat é ${i}", "categoryId": 0}` :
    `{"name": "Chat é 🐈 ${i}", "categoryId": ${1 + (i % 5)}}`)
  elements[1500] = JSON.stringify('x'.repeat(70_000))
  elements[1501] = JSON.stringify({ name: 'é'.repeat(40_000), categoryId: 1 })
  const text = `[\n${elements.map((element, i) => i % 3 === 0 ? `  ${element},\n` : `${element}, `).join('')}\t{"name": "Last", "categoryId": 1}\n]\n`
  const json = join(dir, 'pets.json')
  writeFileSync(json, text)
  const errors = join(dir, 'rejected.jsonl')
  assert.equal(await runPetsImport(async (work) => await work(store), json, { batchSize: 500, dryRun: false, errors }), false)

  const lines = text.split('\n')
  const reported = readFileSync(errors, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as { index: number, line: number, column: number })
  const refused = elements.flatMap((_, i) => i % 7 === 3 || i === 1500 || i === 1501 ? [i] : [])
  assert.deepEqual(reported.map(({ index }) => index), refused)
  for (const { index, line, column } of reported) {
    assert.ok(lines[line - 1]!.slice(column - 1).startsWith(elements[index]!), `element ${index} is at line ${line}, column ${column}`)
  }
  const expected = [...elements.flatMap((element, i) => refused.includes(i) ? [] : [(JSON.parse(element) as { name: string }).name]), 'Last']
  assert.deepEqual((await storedPets(store.db)).map(([name]) => name), expected)

  // A CSV file of CRLF lines whose quoted field of two lines, and a four-byte character, are cut by a read.
  const rows = Array.from({ length: 4000 }, (_, i) => i === 2000 ? `"Two\r\nlines 🐈 ${i}",1` : `Pet 🐈 ${i},${1 + (i % 5)}`)
  const csv = join(dir, 'pets.csv')
  writeFileSync(csv, `name,categoryId\r\n${rows.join('\r\n')}\r\n`)
  assert.equal(await runPetsImport(async (work) => await work(store), csv, { batchSize: 500, dryRun: false }), true)
  const names = (await storedPets(store.db)).map(([name]) => name).slice(expected.length)
  assert.equal(names.length, rows.length)
  assert.equal(names[2000], 'Two\r\nlines 🐈 2000')
  assert.equal(names[3999], 'Pet 🐈 3999')
})

test('a fault found past the first read (a byte not UTF-8, a JSON text cut short) refuses the file before anything is stored', async (t) => {
  const dir = tempDir(t)
  const { db, databaseUrl } = await createTestStore(t)
  const env = { DATABASE_URL: databaseUrl }
  const rows = Array.from({ length: 9000 }, (_, i) => `{"name":"Pet é ${i}","categoryId":1}`)
  const cases: Array<[string, Buffer, RegExp]> = [
    ['cut.json', Buffer.from(`[\n${rows.join(',\n')},\n{"name":"Pet é`), /is not valid JSON: the text ends before the JSON value is complete at line 9002, column 15$/m],
    ['latin1.json', Buffer.concat([Buffer.from(`[\n${rows.join(',\n')},\n{"name":"Caf`), Buffer.from([0xe9]), Buffer.from('","categoryId":1}]')]),
      new RegExp(`is not UTF-8: the bytes at line 9002, column 13 \\(byte ${Buffer.byteLength(`[\n${rows.join(',\n')},\n{"name":"Caf`)}\\) are not; save it as UTF-8$`, 'm')],
    ['latin1.csv', Buffer.concat([Buffer.from(`name,categoryId\n${rows.map((_, i) => `Pet é ${i},1`).join('\n')}\nCaf`), Buffer.from([0xe9]), Buffer.from(',1\n')]),
      /is not UTF-8: the bytes at line 9002, column 4 \(byte \d+\) are not; save it as UTF-8$/m]
  ]
  for (const [name, bytes, message] of cases) {
    assert.ok(bytes.length > 64 * 1024, 'past the first read')
    writeFileSync(join(dir, name), bytes)
    const result = await runCli(['pets', 'import', join(dir, name)], env)
    assert.equal(result.code, 2, name)
    assert.match(result.stderr, message)
    assert.doesNotMatch(result.stdout, /Importing/)
  }
  assert.deepEqual(await storedPets(db), [])
})

test('an import holds a batch at a time, not the file: 100,000 rows go through a heap of 32 MB, which they once took thrice over', async (t) => {
  const dir = tempDir(t)
  const { databaseUrl } = await createTestStore(t)
  const file = join(dir, 'pets.csv')
  writeFileSync(file, `name,categoryId,status\n${Array.from({ length: 100_000 }, (_, i) => `Pet number ${i},${1 + (i % 50)},available`).join('\n')}\n`)
  const result = await runCli(['pets', 'import', file, '--dry-run'], { DATABASE_URL: databaseUrl, NODE_OPTIONS: '--max-old-space-size=32' })
  assert.equal(result.code, 0, result.stderr.slice(-2000))
  assert.match(result.stdout, /^Valid, not stored \(dry run\): 100000 pets\.$/m)
})

test('a row past 1 MiB (a field of 20 MB, a CSV quote never closed before 3,000,000 rows) stops the import as a file that cannot be used, within a heap of 32 MB: it took gigabytes', async (t) => {
  const dir = tempDir(t)
  const { db, databaseUrl } = await createTestStore(t)
  const cases: Array<[string, string, RegExp]> = [
    ['quote.csv', `name,categoryId\nRex,1\n"Tom,1\n${'Fido,2\n'.repeat(3_000_000)}`, /quote\.csv: the row at line 3 is longer than 1048576 characters \(a quote opened and never closed takes in the rest of the file\)$/],
    ['field.json', `[{"name":"Rex","categoryId":1},\n{"name":"${'a'.repeat(20_000_000)}","categoryId":1}]`, /field\.json: the row at element \[1\] at line 2, column 1 is longer than 1048576 bytes$/]
  ]
  for (const [name, text, message] of cases) {
    writeFileSync(join(dir, name), text)
    const result = await runCli(['pets', 'import', join(dir, name)], { DATABASE_URL: databaseUrl, NODE_OPTIONS: '--max-old-space-size=32' })
    assert.equal(result.code, 2, `${name}: ${result.stderr.slice(-2000)}`)
    assert.match(result.stderr.trim(), message)
    assert.equal(result.stderr.trim().split('\n').length, 1, `one line: ${result.stderr}`)
  }
  assert.deepEqual(await storedPets(db), [])
})

test('a file that is a pipe (mkfifo, /dev/stdin) is imported, through a temporary copy removed after', async (t) => {
  const { db, databaseUrl } = await createTestStore(t)
  const dir = tempDir(t)
  const temporary = tempDir(t)
  const fifo = join(dir, 'pets.csv')
  await promisify(execFile)('mkfifo', [fifo])
  const importing = runCli(['pets', 'import', fifo], { DATABASE_URL: databaseUrl, TMPDIR: temporary })
  await writeFile(fifo, 'name,categoryId\nRex,1\nTom,2\n')
  const result = await importing
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /^Stored: 2 pets\.$/m)
  assert.deepEqual((await storedPets(db)).map(([name]) => name), ['Rex', 'Tom'])
  assert.deepEqual(readdirSync(temporary).filter((name) => name.startsWith('petstore-import-')), [], 'the copy is removed')
})

test('a JSON fault at a token that starts in an earlier read is named where the token starts', async (t) => {
  const dir = tempDir(t)
  const { databaseUrl } = await createTestStore(t)
  const first = '[{"name":"x","categoryId":1}'
  const cases: Array<[string, RegExp]> = [
    // A string of 70,000 characters where a comma belongs: its quote is 64 KiB before its end.
    [`${first} "${'a'.repeat(70_000)}"]`, /unexpected "\\"" where a "," or a closing bracket was expected at line 1, column 30$/m],
    // A string that starts two bytes before the first read ends.
    [`${first}${' '.repeat(65_534 - first.length)}"abcdef"]`, /unexpected "\\"" where a "," or a closing bracket was expected at line 1, column 65535$/m],
    // The tokenizer skipped a byte order mark before the first value uncounted: every offset after it was three bytes short.
    [`\uFEFF\uFEFF${first}]`, /unexpected byte order mark \(U\+FEFF\) at line 1, column 1$/m],
    [`[\uFEFF${first.slice(1)}]`, /unexpected byte order mark \(U\+FEFF\) at line 1, column 2$/m]
  ]
  for (const [text, message] of cases) {
    const file = join(dir, 'pets.json')
    writeFileSync(file, text)
    const result = await runCli(['pets', 'import', file, '--dry-run'], { DATABASE_URL: databaseUrl })
    assert.equal(result.code, 2, result.stdout + result.stderr)
    assert.match(result.stderr, message)
  }
})

test('JSON positions count a bare CR, a LF and a CRLF as one line break each, a CRLF cut between two reads too', async (t) => {
  const dir = tempDir(t)
  const { databaseUrl } = await createTestStore(t)
  const refused = '{"name":"b","categoryId":0}'
  const cases: Array<[string | Buffer, number, RegExp]> = [
    [`[{"name":"a","categoryId":1},\r${refused}]`, 1, /^element \[1\] at line 2, column 1: /m],
    [`[{"name":"a","categoryId":1},\r\n\r\r\n ${refused}]`, 1, /^element \[1\] at line 4, column 2: /m],
    ['[\r\r x]', 2, /not valid JSON: unexpected "x" at line 3, column 2$/m],
    [Buffer.concat([Buffer.from('[\r\r '), Buffer.from([0xff]), Buffer.from(']')]), 2, /is not UTF-8: the bytes at line 3, column 2 \(byte 4\) are not/m],
    // The CR ends the first read (64 KiB), the LF starts the second.
    [Buffer.concat([Buffer.from(`[${' '.repeat(65_534)}\r\n `), Buffer.from([0xff]), Buffer.from(']')]), 2, /is not UTF-8: the bytes at line 2, column 2 \(byte 65538\) are not/m],
    // A CR that ends the file, held for a LF that does not come, is read.
    [`[${refused}]\r`, 1, /^element \[0\] at line 1, column 2: /m],
    [Buffer.concat([Buffer.from(`[${refused}]\r`), Buffer.from([0xe2, 0x82])]), 2, /is not UTF-8: the bytes at line 2, column 1 \(byte 30\) are not/m]
  ]
  for (const [text, code, message] of cases) {
    const file = join(dir, 'pets.json')
    writeFileSync(file, text)
    const result = await runCli(['pets', 'import', file, '--dry-run'], { DATABASE_URL: databaseUrl })
    assert.equal(result.code, code, result.stdout + result.stderr)
    assert.match(result.stdout + result.stderr, message)
  }
})

test('a file changed between the two readings or during the second stores nothing from the change on', async (t) => {
  const { store } = await createTestStore(t)
  const file = sevenPetsCsv(t)
  const printed: string[] = []
  t.mock.method(console, 'log', (line: string) => { printed.push(line) })
  // Grown after the first reading: the second finds it so before any batch.
  const grown = await runPetsImport(async (work) => {
    appendFileSync(file, '\nh,1')
    return await work(store)
  }, file, { batchSize: 3, dryRun: false })
  assert.equal(grown, false)
  assert.match(printed.at(-1)!, /the file changed while it was read \(its size or time of last change\): import it once nothing writes to it\. Stored: 0 pets/)
  assert.deepEqual(await storedPets(store.db), [])

  // Cut short while the second batch was stored: the rows read before the cut are stored (as the file
  // held them), and none read after it, where a cut row read as `pet…,1` would be stored as available.
  writeFileSync(file, ['name,categoryId,status', ...Array.from({ length: 40_000 }, (_, i) => `pet${i},1,sold`)].join('\n'))
  let batches = 0
  const pets = Object.create(store.pets) as typeof store.pets
  pets.insertMany = async (batch) => {
    if (++batches === 2) truncateSync(file, 100_000)
    return await store.pets.insertMany(batch)
  }
  const cut = await runPetsImport(async (work) => await work({ ...store, pets }), file, { batchSize: 1000, dryRun: false })
  assert.equal(cut, false)
  const names = (await storedPets(store.db)).map(([name, , status]) => `${name} ${status}`)
  assert.ok(names.length >= 2000 && names.length < 40_000 && names.length % 1000 === 0, `${names.length} stored`)
  assert.match(printed.at(-1)!, new RegExp(`the file changed while it was read .* Stored: ${names.length} pets, the file's first valid rows; the rest not\\.$`))
  assert.deepEqual(names, Array.from({ length: names.length }, (_, i) => `pet${i} sold`))
})

/**
 * `pets import` of a new FIFO, with a temporary folder of its own: the process, what it prints, and
 * its copies of the FIFO in that folder.
 */
async function importFifo (t: TestContext, databaseUrl: string) {
  const dir = tempDir(t)
  const temporary = tempDir(t)
  const fifo = join(dir, 'pets.csv')
  await promisify(execFile)('mkfifo', [fifo])
  const child = spawn(process.execPath, [...CLI, 'pets', 'import', fifo], { env: { ...process.env, DATABASE_URL: databaseUrl, TMPDIR: temporary }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const printed = { stdout: '' }
  child.stdout.on('data', (chunk) => { printed.stdout += chunk })
  const copies = () => readdirSync(temporary).filter((name) => name.startsWith('petstore-import-'))
  const copyBegun = async () => { while (copies().length === 0) await new Promise((resolve) => setTimeout(resolve, 20)) }
  return { dir, fifo, child, printed, copies, copyBegun }
}

test('a signal while a pipe is copied stops at once, nothing stored, the copy removed; a temporary folder that cannot be used is named', async (t) => {
  const { db, databaseUrl } = await createTestStore(t)
  const { dir, fifo, child, printed, copies, copyBegun } = await importFifo(t, databaseUrl)
  // A writer that never ends, as `yes |` or a stalled download: the copy waits for more.
  const writer = createWriteStream(fifo)
  writer.on('error', () => {}) // EPIPE, once the import has stopped reading
  writer.write('name,categoryId\nRex,1\n')
  await copyBegun()
  child.kill('SIGTERM')
  const [code] = await once(child, 'exit')
  writer.destroy()
  assert.equal(code, 1, printed.stdout)
  assert.match(printed.stdout, /^Stopped \(SIGTERM or Ctrl-C\) before the import began: nothing stored\.$/m)
  assert.deepEqual(copies(), [])
  assert.deepEqual(await storedPets(db), [])

  // os.tmpdir() reads TMPDIR at each call.
  const savedTemporary = process.env.TMPDIR
  t.after(() => {
    if (savedTemporary === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = savedTemporary
  })
  process.env.TMPDIR = join(dir, 'missing')
  // No writer: the pipe is opened without waiting for one. A writer's open() blocked for good on a
  // thread of libuv's pool when the import had opened and closed the pipe before it (the suite hung).
  await assert.rejects(runPetsImport(async (work) => await work((await createTestStore(t)).store), fifo, { batchSize: 500, dryRun: false }),
    /^ImportUsageError: cannot copy .*pets\.csv into the temporary folder .*missing \(TMPDIR\): ENOENT$/)
})

test('a device (/dev/zero, which never ends) is refused at once, not copied until the temporary folder\'s disk is full', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const result = await runCli(['pets', 'import', '/dev/zero', '--format', 'json'], { DATABASE_URL: databaseUrl, TMPDIR: tempDir(t) })
  assert.equal(result.code, 2, result.stderr)
  assert.equal(result.stderr, 'petstore: /dev/zero is a device, not a file of pets: name a file, or a pipe (/dev/stdin)\n')
})

test('a copy that cannot be written (the temporary folder\'s disk full; here a limit on file sizes) is said to fail there, not in reading the file', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const fifo = join(tempDir(t), 'pets.csv')
  await promisify(execFile)('mkfifo', [fifo])
  // Past the limit a write fails with EFBIG, the signal it would raise ignored, as one fails with ENOSPC on a full disk.
  const child = spawn('sh', ['-c', 'trap "" XFSZ; ulimit -f 2048; exec "$@"', 'sh', process.execPath, ...CLI, 'pets', 'import', fifo],
    { env: { ...process.env, DATABASE_URL: databaseUrl, TMPDIR: tempDir(t) }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const writer = createWriteStream(fifo)
  writer.on('error', () => {}) // the import stops reading before the end
  writer.end(`name,categoryId\n${'Rex,1\n'.repeat(1_500_000)}`)
  const [code] = await once(child, 'exit')
  assert.equal(code, 2, stderr)
  assert.match(stderr, /^petstore: cannot copy .*pets\.csv into the temporary folder .* \(TMPDIR\): EFBIG$/m)
})

test('a pipe no writer ever opens waits for one, and a signal stops the import at once: no thread is left blocked in open()', { timeout: 20_000 }, async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const { child, printed, copies, copyBegun } = await importFifo(t, databaseUrl)
  // Its copy is begun once the pipe is open, which a writer no longer has to open first.
  await copyBegun()
  child.kill('SIGTERM')
  const outcome = await Promise.race([once(child, 'exit'), new Promise((resolve) => setTimeout(resolve, 5000, 'still running'))])
  assert.deepEqual(outcome, [1, null], printed.stdout)
  assert.match(printed.stdout, /^Stopped \(SIGTERM or Ctrl-C\) before the import began: nothing stored\.$/m)
  assert.deepEqual(copies(), [])
})
