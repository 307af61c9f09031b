import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SqliteConnection } from '../../src/store/sqlite/sqlite-connection.js'
import { insertPets } from '../../src/store/sqlite/sqlite-pet-writes.js'
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
