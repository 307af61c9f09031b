import type { TestContext } from 'node:test'
import type { Db } from '../../src/db/database.js'
import { defer } from '../helper.js'

/** A read of the event log, as a test sees it: the turn of the event loop it came in, and what its filter names. */
export interface LogRead {
  turn: number
  /** Whether its filter names the event's type. */
  typed: boolean
  /** Whether its filter bounds the ids from above. */
  bounded: boolean
  /** The id it reads after (its filter's first value; the tests' ids are safe integers). */
  after: number
}

/**
 * `db`, noting each read of the events by id (a query with a filter and a limit: not the look for
 * the newest, which has no filter) and the turn of the event loop it came in: turns are counted by a
 * chain of setImmediate, for the test's length.
 */
export function noteLogReads (t: TestContext, db: Db): { db: Db, reads: LogRead[] } {
  let turns = 0
  let counting = true
  const turn = () => { turns++; if (counting) setImmediate(turn) }
  turn()
  defer(t, () => { counting = false })
  const reads: LogRead[] = []
  const textOf = (part: unknown) => JSON.stringify(part, (_key, value: unknown) => typeof value === 'bigint' ? String(value) : value)
  const noting = db.withPlugin({
    transformQuery: ({ node }) => {
      if (node.kind === 'SelectQueryNode' && textOf(node.from).includes('"events"') && node.limit !== undefined && node.where !== undefined) {
        const where = textOf(node.where)
        const after = Number(/"kind":"ValueNode","value":"?(\d+)/.exec(where)![1]!)
        reads.push({ turn: turns, typed: where.includes('"type"'), bounded: where.includes('"<="'), after })
      }
      return node
    },
    transformResult: async ({ result }) => result
  })
  return { db: noting, reads }
}
