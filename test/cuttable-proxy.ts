import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'

export interface CuttableProxy {
  port: number
  /** The target's URL with the proxy in place of its host and port. */
  url: string
  /** Drops every connection through it, and every new one until `restore`, as a network fault would. */
  cut: () => void
  restore: () => void
  /** Stops passing bytes either way, keeping every connection open, as a frozen server or network would; `thaw` passes them on. */
  freeze: () => void
  thaw: () => void
  close: () => void
}

/**
 * A TCP proxy to the database that a test can cut and restore, or freeze and thaw. Cut, it keeps its
 * port and drops what connects: a port it let go could be taken meanwhile by a client socket of the suite.
 */
export async function createCuttableProxy (target: URL): Promise<CuttableProxy> {
  const sockets = new Set<Socket>()
  const pairs = new Set<{ client: Socket, upstream: Socket }>()
  let cut = false
  let frozen = false
  // Frozen, a connection's bytes wait in its sockets, unread: no pipe is left to read them on a 'drain'.
  const forward = ({ client, upstream }: { client: Socket, upstream: Socket }) => { client.pipe(upstream).pipe(client) }
  const hold = ({ client, upstream }: { client: Socket, upstream: Socket }) => {
    client.unpipe(upstream).pause()
    upstream.unpipe(client).pause()
  }
  const server = createServer((client) => {
    if (cut) {
      client.destroy()
      return
    }
    const pair = { client, upstream: connect(Number(target.port || 5432), target.hostname) }
    pairs.add(pair)
    for (const socket of [client, pair.upstream]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => { sockets.delete(socket); pairs.delete(pair); client.destroy(); pair.upstream.destroy() })
    }
    if (frozen) hold(pair)
    else forward(pair)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const dropAll = () => { for (const socket of sockets) socket.destroy() }
  const { port } = server.address() as AddressInfo
  const url = new URL(target)
  url.host = `127.0.0.1:${port}`
  return {
    port,
    url: url.toString(),
    cut: () => {
      cut = true
      dropAll()
    },
    restore: () => { cut = false },
    freeze: () => {
      frozen = true
      for (const pair of pairs) hold(pair)
    },
    thaw: () => {
      frozen = false
      for (const pair of pairs) forward(pair)
    },
    close: () => {
      dropAll()
      server.close()
    }
  }
}
