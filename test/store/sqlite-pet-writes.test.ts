import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SqliteConnection } from '../../src/store/sqlite/sqlite-connection.js'
import type { PetCreated } from '../../src/store/pet-store.js'
import { commitCreateGroups, commitCreates, insertPets } from '../../src/store/sqlite/sqlite-pet-writes.js'
import { createTestStore, defer } from '../helper.js'

// The ids of inserted pets are worked out, not read back (see PETS_SEQUENCE): they must be the rows' own.
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

/** A connection that counts the write transactions begun on it. */
class CountingConnection extends SqliteConnection {
  transactions = 0

  override writeTransaction<T> (work: () => T): T {
    this.transactions++
    return super.writeTransaction(work)
  }
}

test('SQLite: groups of creates are committed in one transaction, each answered alone, and one group\'s fault fails that group only', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const path = databaseUrl.slice('sqlite:'.length)
  const connection = new CountingConnection(path, 'default')
  defer(t, () => { connection.close() })
  const group = (...names: string[]) => ({ creates: names.map((name) => ({ pet: { name, categoryId: 1n, status: 'available' as const } })), createdAt: '2026-11-25T00:00:00.000Z' })
  const names = (outcome: PetCreated[] | Error) => outcome instanceof Error ? outcome.message : outcome.map((created) => created.outcome === 'created' ? created.pet.name : 'replayed')
  const stored = () => connection.query<{ name: string }>('select name from pets order by id').map(({ name }) => name)
  const transactionsOf = (commit: () => Array<PetCreated[] | Error>) => {
    connection.transactions = 0
    const outcomes = commit()
    return { outcomes: outcomes.map(names), transactions: connection.transactions }
  }

  assert.deepEqual(transactionsOf(() => commitCreateGroups(connection, [group('A'), group('B', 'C')])), { outcomes: [['A'], ['B', 'C']], transactions: 1 })

  connection.query("create trigger refused before insert on pets when new.name = 'Refused' begin select raise(abort, 'refused by a trigger'); end")
  assert.deepEqual(transactionsOf(() => commitCreateGroups(connection, [group('D', 'E'), group('F', 'Refused'), group('G')])), {
    outcomes: [['D', 'E'], 'refused by a trigger', ['G']],
    transactions: 4 // the three together, then each alone
  })
  assert.deepEqual(stored(), ['A', 'B', 'C', 'D', 'E', 'G'])

  // Another connection holds the write lock past the busy timeout: every group fails after one wait, not one each.
  const other = new SqliteConnection(path, 'default')
  defer(t, () => { other.close() })
  other.query('begin immediate')
  const busy = transactionsOf(() => commitCreateGroups(connection, [group('H'), group('I'), group('J')]))
  other.query('rollback')
  assert.deepEqual(busy, { outcomes: Array(3).fill('database is locked'), transactions: 1 })
  assert.deepEqual(stored(), ['A', 'B', 'C', 'D', 'E', 'G'])
})

test('SQLite: a write transaction is never begun inside another, where it would be a savepoint answered as committed', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const connection = new SqliteConnection(databaseUrl.slice('sqlite:'.length), 'default')
  defer(t, () => { connection.close() })
  connection.query('begin immediate') // left open, as by a rollback that failed
  assert.throws(() => commitCreates(connection, [{ pet: { name: 'Lost', categoryId: 1n, status: 'available' } }], '2026-11-25T00:00:00.000Z'), /already open/)
  connection.query('rollback')
})

// A claim stores its answer before its pet is inserted, for the id the pet will take (see writeCreates).
test('SQLite: a claimed create answers with its pet\'s own id and location, or fails whole', async (t) => {
  const { databaseUrl } = await createTestStore(t)
  const connection = new SqliteConnection(databaseUrl.slice('sqlite:'.length), 'default')
  defer(t, () => { connection.close() })
  const createdAt = '2026-11-25T00:00:00.000Z'
  const claim = (key: string) => ({ apiKeyId: 1n, key, requestHash: `hash of ${key}`, locationPrefix: '/v1/pets/', notBefore: '2026-11-24T00:00:00.000Z' })
  const create = (name: string, key?: string) => ({ pet: { name, categoryId: 1n, status: 'available' as const }, idempotency: key === undefined ? undefined : claim(key) })
  const answers = () => connection.query<{ key: string, body: string, location: string }>('select key, response_body as body, location from idempotency_keys order by key')
  const pets = () => connection.query<{ id: bigint, name: string }>('select id, name from pets order by id')

  const outcomes = commitCreates(connection, [create('A', 'a'), create('B'), create('C', 'c')], createdAt)
  const [a, b, c] = pets()
  assert.deepEqual(outcomes.map((outcome) => outcome.outcome === 'created' ? outcome.pet.id : undefined), [a!.id, b!.id, c!.id])
  assert.deepEqual(answers(), [
    { key: 'a', body: `{"id":${a!.id},"name":"A","categoryId":1,"status":"available"}`, location: `/v1/pets/${a!.id}` },
    { key: 'c', body: `{"id":${c!.id},"name":"C","categoryId":1,"status":"available"}`, location: `/v1/pets/${c!.id}` }
  ])

  // A key used before replays its answer, and the pets after it take the ids their answers name.
  const again = commitCreates(connection, [create('A again', 'a'), create('D', 'd')], createdAt)
  assert.deepEqual(again[0], { outcome: 'replayed', response: { requestHash: 'hash of a', status: 201, body: answers()[0]!.body, location: `/v1/pets/${a!.id}` } })
  const d = pets().at(-1)!
  assert.equal(d.name, 'D')
  assert.equal(answers().find(({ key }) => key === 'd')!.location, `/v1/pets/${d.id}`)

  // A row inserted among the pets before the claimed one (a trigger on the claim here) would make its
  // answer name another pet: the group fails, and nothing of it is kept.
  connection.query("create trigger intruder after insert on idempotency_keys when new.key = 'e' begin insert into pets (name, category_id, status, created_at) values ('Intruder', 1, 'sold', new.created_at); end")
  assert.throws(() => commitCreates(connection, [create('E', 'e')], createdAt), /other rows were inserted/)
  assert.deepEqual(pets().map(({ name }) => name), ['A', 'B', 'C', 'D'])
  assert.deepEqual(answers().map(({ key }) => key), ['a', 'c', 'd'])
})
