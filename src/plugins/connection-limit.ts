import fp from 'fastify-plugin'
import { clientNetwork } from '../client-address.js'

/** The longest a refused connection goes without a log line. */
const WARNING_INTERVAL_MS = 60_000

/**
 * Counts the open connections of each client network (an address, or an IPv6 /64 as the rate limit
 * counts them: a subscriber holds all of one, and each address would have places of its own): `admit`
 * takes a place and returns what gives it back, or undefined when the network holds `perAddress`.
 */
export function connectionCounts (perAddress: number): { admit: (address: string) => (() => void) | undefined } {
  const open = new Map<string, number>()
  return {
    admit: (address) => {
      const network = clientNetwork(address, undefined)
      const count = (open.get(network) ?? 0) + 1
      if (count > perAddress) return undefined
      open.set(network, count)
      return () => {
        const left = open.get(network)! - 1
        if (left === 0) open.delete(network)
        else open.set(network, left)
      }
    }
  }
}

/**
 * Refuses, by closing it at once, a connection from an address that already holds `perAddress`
 * open ones, so that one client (idle connections reopened as they are dropped) cannot fill the
 * instance's connection limit and lock everyone else out. A trusted proxy's connections are not
 * counted: they carry many clients, whose addresses a socket does not show.
 */
export default fp<{ perAddress: number, trusted: (address: string) => boolean }>(async (app, { perAddress, trusted }) => {
  const counts = connectionCounts(perAddress)
  let warnedAt = -Infinity
  app.server.on('connection', (socket) => {
    const address = socket.remoteAddress ?? ''
    if (trusted(address)) return
    const release = counts.admit(address)
    if (release === undefined) {
      socket.destroy()
      // Behind a proxy not named in TRUST_PROXY, every client comes from the proxy's address: the
      // operator learns why its clients get errors, at most once a minute however many are refused.
      const now = performance.now()
      if (now - warnedAt >= WARNING_INTERVAL_MS) {
        warnedAt = now
        const network = clientNetwork(address, undefined)
        app.log.warn({ address, network, perAddress }, `connections from ${network} past CONNECTIONS_PER_ADDRESS (${perAddress}) are closed at once; if it is a proxy or load balancer, name it in TRUST_PROXY`)
      }
      return
    }
    socket.once('close', release)
  })
}, { name: 'connection-limit' })
