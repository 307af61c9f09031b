import fp from 'fastify-plugin'

/** The longest a refused connection goes without a log line. */
const WARNING_INTERVAL_MS = 60_000

/**
 * Refuses, by closing it at once, a connection from an address that already holds `perAddress`
 * open ones, so that one client (idle connections reopened as they are dropped) cannot fill the
 * instance's connection limit and lock everyone else out. A trusted proxy's connections are not
 * counted: they carry many clients, whose addresses a socket does not show.
 */
export default fp<{ perAddress: number, trusted: (address: string) => boolean }>(async (app, { perAddress, trusted }) => {
  const open = new Map<string, number>()
  let warnedAt = -Infinity
  app.server.on('connection', (socket) => {
    const address = socket.remoteAddress ?? ''
    if (trusted(address)) return
    const count = (open.get(address) ?? 0) + 1
    if (count > perAddress) {
      socket.destroy()
      // Behind a proxy not named in TRUST_PROXY, every client comes from the proxy's address: the
      // operator learns why its clients get errors, at most once a minute however many are refused.
      const now = performance.now()
      if (now - warnedAt >= WARNING_INTERVAL_MS) {
        warnedAt = now
        app.log.warn({ address, perAddress }, `connections from ${address} past CONNECTIONS_PER_ADDRESS (${perAddress}) are closed at once; if it is a proxy or load balancer, name it in TRUST_PROXY`)
      }
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
