import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SqliteConnection } from '../../src/store/sqlite/sqlite-connection.js'
import type { PetCreated } from '../../src/store/pet-store.js'
import { commitCreateGroups, insertPets } from '../../src/store/sqlite/sqlite-pet-writes.js'
import { createTestStore, defer } from '../helper.js'

// The ids of inserted pets are worked out, not read back (see insertPets): they must be the rows' own.
test('SQLite: inserted pets are answered with the ids their rows took, or not at all', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const connection = new SqliteConnection(databaseUrl.slice('sqlite:'.length), 'default')
  defer(t, () => { connection.close() })
  const createdAt = '2026-11-25T00:00:00.000Z'
  const values = Array.from({ length: 37 }, (_, i) => ({ name: `Pet ${i}`, categoryId: BigInt(1 + i % 3), status: 'available' as const }))
  const rows = () => connection.query('select id, name, category_id as "categoryId", status from pets order by id')
  const events = () => connection.query<{ data: string }>("select data from events where type = 'pet.created' order by id").map(({ data }) => data)

  const pets = connection.writeTransaction(() => insertPets(connection, values, createdAt)) // chunks of 32, 4 and 1
  assert.deepEqual(pets.map(({ name }) => name), values.map(({ name }) => name))
  assert.deepEqual(pets, rows())
  assert.deepEqual(events(), pets.map(({ id, name, categoryId, status }) => `{"id":${id},"name":"${name}","categoryId":${categoryId},"status":"${status}"}`))

  // Something else inserting a row among a create's pets (a trigger here), before its last pet, whether
  // in one chunk, the first of two or the middle one of three: the create fails whole.
  for (const [after, count] of [['Pet 0', 2], ['Pet 0', 3], ['Pet 2', 4], ['Pet 34', 37]] as const) {
    connection.query(`create trigger intruder after insert on pets when new.name = '${after}' begin insert into pets (name, category_id, status, created_at) values ('Intruder', 1, 'sold', new.created_at); end`)
    assert.throws(() => connection.writeTransaction(() => insertPets(connection, values.slice(0, count), createdAt)), /other rows were inserted among the pets/, `${after} of ${count}`)
    connection.query('drop trigger intruder')
  }
  assert.deepEqual(rows(), pets)
  assert.equal(events().length, pets.length)

  // After the create's last row, another row leaves the create's ids as they are.
  connection.query("create trigger intruder after insert on pets when new.name = 'Pet 1' begin insert into pets (name, category_id, status, created_at) values ('Intruder', 1, 'sold', new.created_at); end")
  const created = connection.writeTransaction(() => insertPets(connection, values.slice(0, 2), createdAt))
  assert.deepEqual(created, rows().slice(-3, -1))
})

test('SQLite: groups of creates committed together are each answered alone, and one group\'s fault fails that group only', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const path = databaseUrl.slice('sqlite:'.length)
  const connection = new SqliteConnection(path, 'default')
  defer(t, () => { connection.close() })
  const group = (...names: string[]) => ({ creates: names.map((name) => ({ pet: { name, categoryId: 1n, status: 'available' as const } })), createdAt: '2026-11-25T00:00:00.000Z' })
  const names = (outcome: PetCreated[] | Error) => outcome instanceof Error ? outcome.message : outcome.map((created) => created.outcome === 'created' ? created.pet.name : 'replayed')
  const stored = () => connection.query<{ name: string }>('select name from pets order by id').map(({ name }) => name)

  connection.query("create trigger refused before insert on pets when new.name = 'Refused' begin select raise(abort, 'refused by a trigger'); end")
  const outcomes = commitCreateGroups(connection, [group('A', 'B'), group('C', 'Refused'), group('D')])
  assert.deepEqual(outcomes.map(names), [['A', 'B'], 'refused by a trigger', ['D']])
  assert.deepEqual(stored(), ['A', 'B', 'D'])

  // Another process holds the write lock past the busy timeout: every group fails after one wait, not one each.
  const other = new SqliteConnection(path, 'default')
  defer(t, () => { other.close() })
  other.query('begin immediate')
  const started = performance.now()
  const busy = commitCreateGroups(connection, [group('E'), group('F'), group('G'), group('H')])
  const waitedMs = performance.now() - started
  other.query('rollback')
  assert.deepEqual(busy.map((outcome) => outcome instanceof Error && (outcome as { code?: string }).code), Array(4).fill('SQLITE_BUSY'))
  assert.ok(waitedMs < 1200, `one busy wait of 500 ms, not four: ${Math.round(waitedMs)} ms`)
  assert.deepEqual(stored(), ['A', 'B', 'D'])
})
