import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import { isPostgres } from '../../src/db/dialect.js'
import type { Db } from '../../src/db/database.js'
import { createTestStore, forEachStore, tempDir } from '../helper.js'
import { runCli } from '../process.js'

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
    assert.ok(lines.includes('line 6: `name` must be 1 to 100 characters once whitespace at both ends is trimmed'))
    assert.ok(lines.includes('line 8: `categoryId` must be an integer from 1 to 9223372036854775807'))
    assert.ok(lines.includes('line 9: `status` must be one of available, pending, sold'))
    assert.match(result.stdout, /^line 10: Invalid Record Length/m)
    assert.ok(lines.includes('Stored: 4 pets, lines 2-3, 7, 11.'), result.stdout)
    assert.ok(lines.includes('Rejected: 5 rows, lines 5-6, 8-10.'))
    assert.deepEqual(await storedPets(db), [
      ['Rex', '3', 'available'],
      ['Two\nlines', '4', 'sold'],
      ['Big', '9223372036854775807', 'pending'],
      ['Kitty', '2', 'available']
    ])
  })

  test('a JSON import reports rows by the line they start on; exit 0 when all are stored', async (t) => {
    const { db, env, file } = await setUp(t)
    const json = file('pets.json', '[\n  {\n    "name": "Rex",\n    "categoryId": 3\n  },\n  {"name": "Tom, \\"the [cat]\\"", "categoryId": 9223372036854775807, "status": "sold"}\n]\n')
    const ok = await runCli(['pets', 'import', json, '--batch-size', '1'], env)
    assert.equal(ok.code, 0, ok.stdout + ok.stderr)
    assert.match(ok.stdout, /^Stored: 2 pets, lines 2-6\.$/m)
    assert.deepEqual(await storedPets(db), [['Rex', '3', 'available'], ['Tom, "the [cat]"', '9223372036854775807', 'sold']])
    if (isPostgres(db)) {
      // The planner knows the table's new size at once (pg_stats is filled by ANALYZE).
      const { rows } = await sql<{ columns: string }>`select count(*) as columns from pg_stats where tablename = 'pets'`.execute(db)
      assert.ok(Number(rows[0]!.columns) > 0, 'pets analyzed after the import')
    }

    const bad = file('bad.json', '[\n  {"name": "A", "categoryId": 1},\n  "Rex",\n  {"name": "B", "categoryId": 1, "color": "red"},\n  {"name": "C", "categoryId": 1}\n]')
    const result = await runCli(['pets', 'import', bad], env)
    assert.equal(result.code, 1)
    assert.match(result.stdout, /^line 3: The row must be an object$/m)
    assert.match(result.stdout, /^line 4: The row has an unknown field `color`$/m)
    assert.match(result.stdout, /^Stored: 2 pets, lines 2, 5\.$/m)
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
    assert.match(result.stdout, /^Valid, not stored \(dry run\): 1 pet, lines 2\.$/m)
    assert.deepEqual(await storedPets(db), [])
    const valid = await runCli(['pets', 'import', file('ok.csv', 'name,categoryId\nRex,3\n'), '--dry-run'], env)
    assert.equal(valid.code, 0)
    assert.deepEqual(await storedPets(db), [])
  })

  test('a store failure half-way leaves no partial batch, and the report says which lines were stored', async (t) => {
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
    assert.match(result.stdout, /^Stored: 3 pets, lines 2-4\.$/m)
    assert.match(result.stdout, /^Store failure: the batch of lines 5-7 was not stored: .*injected store failure/m)
    assert.match(result.stdout, /^Not tried after the failure: lines 8-9\.$/m)
    assert.match(result.stdout, /^line 10: `categoryId` must be/m, 'rows after the failure are still checked')
    assert.deepEqual((await storedPets(db)).map(([name]) => name), ['a', 'b', 'c'])
  })
})

test('an unusable file is one clear line and exit 2', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const cases: Array<[string, string, RegExp]> = [
    ['object.json', '{"name": "Rex"}', /must hold one array of pets/],
    ['broken.json', '[{"name": ', /is not valid JSON/],
    ['header.csv', 'nom,categoryId\nRex,1\n', /the CSV header must name the columns name, categoryId and optionally status \(got nom,categoryId\)/],
    ['pets.txt', 'name,categoryId\n', /cannot tell the format of .*pets\.txt/]
  ]
  for (const [name, text, message] of cases) {
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

test('progress: plain lines when not on a terminal, a bar on one', async (t) => {
  const dir = tempDir(t)
  const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
  const csv = join(dir, 'pets.csv')
  writeFileSync(csv, ['name,categoryId', ...Array.from({ length: 300 }, (_, i) => `Pet ${i},1`)].join('\n'))
  const plain = await runCli(['pets', 'import', csv, '--batch-size', '100'], env)
  assert.equal(plain.code, 0)
  assert.match(plain.stderr, /^Imported: 300\/300 rows \(100%\)$/m)
  assert.ok(!plain.stderr.includes('\r'), 'no terminal control in a log')

  // `script` runs the command on a pseudo-terminal, as a user's shell would.
  const command = [process.execPath, '--import', 'tsx', 'src/cli/main.ts', 'pets', 'import', csv, '--batch-size', '100'].map((arg) => `'${arg}'`).join(' ')
  const { stdout } = await promisify(execFile)('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...env, TERM: 'xterm' } })
  assert.match(stdout, /Imported \[\u2588+\] 100% \| 300\/300 rows/)
})
