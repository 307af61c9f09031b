import { lookup } from 'node:dns/promises'
import { Agent as HttpAgent, request as httpRequest, type ClientRequestArgs } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { connect as netConnect, isIP, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { connect as tlsConnect } from 'node:tls'
import { ipLiteralOf, isPublicAddress } from './public-address.js'

/** How the service reaches receivers; tests replace parts of it to stay on this machine. */
export interface WebhookNetwork {
  /** A host name's addresses (the system resolver by default). */
  resolve: (hostname: string) => Promise<string[]>
  /** A TCP connection to an address that passed the check (net.connect by default). */
  dial: (address: string, port: number) => Socket
  /** Certificate authorities trusted for https receivers instead of Node's (tests only). */
  ca?: string | undefined
}

export const systemNetwork: WebhookNetwork = {
  resolve: async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map(({ address }) => address),
  dial: (address, port) => netConnect({ host: address, port })
}

/** A receiver's address that may not be reached: not public, and private addresses not allowed. */
export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError'
}

/**
 * The addresses a host stands for (itself for an IP literal), refused unless all are public or
 * private ones are allowed: a name resolving to both could otherwise be dialled at the private one.
 */
export async function checkedAddresses (network: WebhookNetwork, hostname: string, allowPrivate: boolean): Promise<string[]> {
  const literal = ipLiteralOf(hostname)
  const addresses = literal === undefined ? await network.resolve(hostname) : [literal]
  if (addresses.length === 0) throw new RefusedAddressError(`${hostname} has no address`)
  const refused = allowPrivate ? undefined : addresses.find((address) => !isPublicAddress(address))
  if (refused !== undefined) {
    throw new RefusedAddressError(literal === undefined ? `${hostname} resolves to ${refused}, which is not a public address` : `${refused} is not a public address`)
  }
  return addresses
}

export interface DeliveryAnswer {
  /** The receiver's status, when it answered. */
  status?: number
  /** Why there is no 2xx, in a line. */
  error?: string
  durationMs: number
}

export interface WebhookTransportOptions {
  allowPrivate: boolean
  timeoutMs: number
}

// Receivers close idle connections after about 5 s (Node's default); a socket kept longer would
// fail the next delivery with ECONNRESET.
const IDLE_SOCKET_MS = 4000
const MAX_ERROR_LENGTH = 300

/**
 * POSTs deliveries. The address check happens in the agents' connection stage, on the very address
 * dialled, so a name that resolved to a public address when registered cannot be rebound to an
 * internal one later (DNS rebinding). Redirects are not followed: any answer but a 2xx is a failure.
 */
export class WebhookTransport {
  readonly #httpsAgent: HttpsAgent
  readonly #httpAgent: HttpAgent

  constructor (private readonly network: WebhookNetwork, private readonly options: WebhookTransportOptions) {
    // An agent calls this for each new connection and takes the socket when `done` is called.
    const connectChecked = (secure: boolean) => (args: ClientRequestArgs, done?: (error: Error | null, socket: Duplex) => void): undefined => {
      const hostname = args.hostname ?? args.host ?? ''
      checkedAddresses(network, hostname, options.allowPrivate).then((addresses) => {
        const socket = network.dial(addresses[0]!, Number(args.port))
        // The certificate is checked against the host name of the URL, not the address.
        done!(null, secure ? tlsConnect({ socket, host: hostname, ...(isIP(hostname) === 0 && { servername: hostname }), ...(network.ca !== undefined && { ca: network.ca }) }) : socket)
      }, (error: Error) => { done!(error, undefined as never) })
    }
    const agentOptions = { keepAlive: true, timeout: IDLE_SOCKET_MS }
    this.#httpsAgent = new HttpsAgent(agentOptions)
    this.#httpsAgent.createConnection = connectChecked(true)
    this.#httpAgent = new HttpAgent(agentOptions)
    this.#httpAgent.createConnection = connectChecked(false)
  }

  /** POSTs `body` to `url` and settles with the answer or the failure, within the timeout; `signal` aborts it (a shutdown). */
  async post (url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<DeliveryAnswer> {
    const started = performance.now()
    const durationMs = () => Math.round(performance.now() - started)
    const timeout = AbortSignal.timeout(this.options.timeoutMs)
    const secure = url.protocol === 'https:'
    // A URL registered while private addresses were allowed (development) is held to the rules now in force.
    if (!secure && !this.options.allowPrivate) return { error: 'http is refused: webhooks use https (WEBHOOK_ALLOW_PRIVATE is off)', durationMs: 0 }
    const send = secure ? httpsRequest : httpRequest
    return await new Promise<DeliveryAnswer>((resolve) => {
      const request = send(url, {
        method: 'POST',
        agent: secure ? this.#httpsAgent : this.#httpAgent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'petstore-webhooks' },
        signal: AbortSignal.any([timeout, signal])
      }, (response) => {
        const status = response.statusCode ?? 0
        // The body is not needed; it is read to its end so the connection can serve the next delivery.
        response.resume()
        response.on('end', () => { resolve(status >= 200 && status < 300 ? { status, durationMs: durationMs() } : { status, error: `HTTP ${status}`, durationMs: durationMs() }) })
        response.on('error', (error) => { resolve({ status, error: failureOf(error, timeout), durationMs: durationMs() }) })
      })
      request.on('error', (error) => { resolve({ error: failureOf(error, timeout), durationMs: durationMs() }) })
      request.end(body)
    })
  }

  close (): void {
    this.#httpsAgent.destroy()
    this.#httpAgent.destroy()
  }
}

function failureOf (error: NodeJS.ErrnoException, timeout: AbortSignal): string {
  if (timeout.aborted) return 'no answer within the timeout'
  const text = error.code !== undefined && !error.message.includes(error.code) ? `${error.code}: ${error.message}` : error.message
  return text.slice(0, MAX_ERROR_LENGTH)
}
