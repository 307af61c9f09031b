import type { Client, Pool } from 'pg'

/**
 * Ends a connection, dropping it past `ms`: pg's `end()` says goodbye and waits for the server to
 * close the socket, which a server or network frozen at that moment never does (a command, or a start
 * releasing the migrations' lock, waited forever).
 */
export async function endWithin (client: Client, ms: number): Promise<void> {
  const timer = setTimeout(() => { client.connection.stream.destroy() }, ms)
  try {
    await client.end()
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A pool whose `end()` also waits, at most `ms`, for its connections to close, and drops those that
 * have not: pg's resolves once it has said goodbye on each, and the sockets a frozen server never
 * closes kept the process from exiting.
 */
export function endingWithin (pool: Pool, ms: number): Pool {
  const open = new Set<Client>()
  pool.on('connect', (client) => {
    open.add(client)
    client.connection.stream.once('close', () => { open.delete(client) })
  })
  const end = pool.end.bind(pool)
  pool.end = async () => {
    await end()
    if (open.size === 0) return
    const timer = setTimeout(() => { for (const client of open) client.connection.stream.destroy() }, ms)
    await Promise.all([...open].map(async (client) => { await new Promise((resolve) => client.connection.stream.once('close', resolve)) }))
    clearTimeout(timer)
  }
  return pool
}
