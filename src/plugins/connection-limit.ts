import fp from 'fastify-plugin'

/**
 * Refuses, by closing it at once, a connection from an address that already holds `perAddress`
 * open ones, so that one client (idle connections reopened as they are dropped) cannot fill the
 * instance's connection limit and lock everyone else out. A trusted proxy's connections are not
 * counted: they carry many clients, whose addresses a socket does not show.
 */
export default fp<{ perAddress: number, trusted: (address: string) => boolean }>(async (app, { perAddress, trusted }) => {
  const open = new Map<string, number>()
  app.server.on('connection', (socket) => {
    const address = socket.remoteAddress ?? ''
    if (trusted(address)) return
    const count = (open.get(address) ?? 0) + 1
    if (count > perAddress) {
      socket.destroy()
      return
    }
    open.set(address, count)
    socket.once('close', () => {
      const left = open.get(address)! - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })
}, { name: 'connection-limit' })
