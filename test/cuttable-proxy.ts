import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'

export interface CuttableProxy {
  port: number
  /** Drops every connection through it, and every new one until `restore`, as a network fault would. */
  cut: () => void
  restore: () => void
  close: () => void
}

/**
 * A TCP proxy to the database that a test can cut and restore. Cut, it keeps its port and drops what
 * connects: a port it let go could be taken meanwhile by a client socket of the suite.
 */
export async function createCuttableProxy (target: URL): Promise<CuttableProxy> {
  const sockets = new Set<Socket>()
  let cut = false
  const server = createServer((client) => {
    if (cut) {
      client.destroy()
      return
    }
    const upstream = connect(Number(target.port || 5432), target.hostname)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => { sockets.delete(socket); client.destroy(); upstream.destroy() })
    }
    client.pipe(upstream).pipe(client)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const dropAll = () => { for (const socket of sockets) socket.destroy() }
  return {
    port: (server.address() as AddressInfo).port,
    cut: () => {
      cut = true
      dropAll()
    },
    restore: () => { cut = false },
    close: () => {
      dropAll()
      server.close()
    }
  }
}
