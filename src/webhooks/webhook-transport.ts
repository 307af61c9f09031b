import { lookup } from 'node:dns/promises'
import { Agent as HttpAgent, request as httpRequest, type ClientRequestArgs } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { connect as netConnect, isIP, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { connect as tlsConnect } from 'node:tls'
import { trimEnd } from '../trim-end.js'
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

// The system resolver runs on libuv's four threads, which a lookup holds until it ends however long
// its name servers take: webhook lookups use two at most, so that the store's and Redis's connections
// always find one.
const MAX_LOOKUPS = 2
let lookups = 0
const waitingLookups: Array<() => void> = []

async function limitedLookup (hostname: string): Promise<string[]> {
  if (lookups >= MAX_LOOKUPS) await new Promise<void>((resolve) => waitingLookups.push(resolve))
  lookups++
  try {
    return (await lookup(hostname, { all: true, verbatim: true })).map(({ address }) => address)
  } finally {
    lookups--
    waitingLookups.shift()?.()
  }
}

export const systemNetwork: WebhookNetwork = {
  resolve: limitedLookup,
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
  // Refused by name too, as a resolver may not know these names (this machine's did not know `localhost.`).
  if (!allowPrivate && literal === undefined && namesLoopback(hostname)) throw new RefusedAddressError(`${hostname} names this machine`)
  const addresses = literal === undefined ? await network.resolve(hostname) : [literal]
  if (addresses.length === 0) throw new RefusedAddressError(`${hostname} has no address`)
  const refused = allowPrivate ? undefined : addresses.find((address) => !isPublicAddress(address))
  if (refused !== undefined) {
    // The address a name resolves to is not told: a caller could map a private network's names with it.
    throw new RefusedAddressError(literal === undefined ? `${hostname} resolves to an address that is not public` : `${refused} is not a public address`)
  }
  return addresses
}

/** `localhost` and the names under it, with or without dots after them: loopback names by RFC 6761 (section 6.3). */
function namesLoopback (hostname: string): boolean {
  const name = trimEnd(hostname, '.')
  return name === 'localhost' || name.endsWith('.localhost')
}

export interface DeliveryAnswer {
  /** The receiver's status, when it answered. */
  status?: number
  /** Why there is no 2xx, in a line. */
  error?: string
  durationMs: number
}

/**
 * HTTP's statuses are 100 to 599 (RFC 9110, section 15); Node's parser takes any three digits. One
 * outside is a failed attempt logged without its status, which the deliveries log could not answer.
 */
export function isHttpStatus (status: number): boolean {
  return status >= 100 && status <= 599
}

function noStatus (status: number): Omit<DeliveryAnswer, 'durationMs'> {
  return { error: `HTTP ${status}: no HTTP status (100 to 599)` }
}

export interface WebhookTransportOptions {
  allowPrivate: boolean
  timeoutMs: number
}

// Receivers close idle connections after about 5 s (Node's default); a socket kept longer would
// fail the next delivery with ECONNRESET.
const IDLE_SOCKET_MS = 4000
const MAX_ERROR_LENGTH = 300
// A receiver's body longer than this is not read to its end: its connection is closed instead.
const MAX_DRAINED_BYTES = 65_536
// How long past the timeout an attempt is given up whatever its request does.
const GUARD_MS = 1000

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
    const attempt = attemptSignal(timeout, signal)
    return await new Promise<DeliveryAnswer>((resolve) => {
      // Settling twice does nothing.
      const settle = (answer: Omit<DeliveryAnswer, 'durationMs'>) => {
        attempt.answered()
        resolve({ ...answer, durationMs: durationMs() })
      }
      const request = send(url, {
        method: 'POST',
        agent: secure ? this.#httpsAgent : this.#httpAgent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'petstore-webhooks' },
        signal: attempt.signal
      }, (response) => {
        // The status decides, as it comes: a receiver's body is not needed, and one that never ends is
        // no reason to send the event again.
        const status = response.statusCode ?? 0
        settle(status >= 200 && status < 300 ? { status } : isHttpStatus(status) ? { status, error: `HTTP ${status}` } : noStatus(status))
        // Read to its end so that the connection can serve the next delivery, unless it is long (the
        // timeout's abort ends one that never ends).
        let drained = 0
        response.on('data', (chunk: Buffer) => {
          drained += chunk.length
          if (drained > MAX_DRAINED_BYTES) request.destroy()
        })
        response.on('error', () => {}) // the answer is settled; a body cut short changes nothing
      })
      request.on('error', (error) => { settle({ error: failureOf(error, timeout) }) })
      // Node answers a 101 with this event, else with nothing at all but the socket's end.
      request.on('upgrade', (_response, socket) => {
        socket.destroy()
        settle({ status: 101, error: 'HTTP 101: a switch of protocols is no answer' })
      })
      // The request is over, its answer read or its connection gone: this covers one that ended without an answer or an error.
      request.on('close', () => {
        clearTimeout(guard)
        attempt.release()
        settle({ error: 'the connection closed without an answer' })
      })
      // The last bound, should an event above never come: neither a slot of the dispatcher nor a connection is held for longer.
      const guard = setTimeout(() => {
        request.destroy()
        settle({ error: 'no answer within the timeout' })
      }, this.options.timeoutMs + GUARD_MS)
      request.end(body)
    })
  }

  close (): void {
    this.#httpsAgent.destroy()
    this.#httpAgent.destroy()
  }
}

/**
 * A signal that aborts when the attempt's timeout or the shutdown does. `answered` stops it heeding
 * the shutdown once the answer has come: a body still being read is cut by the timeout, or with the
 * agents' sockets at close, and the shutdown signal holds one listener per attempt still waiting for
 * its answer, no more than the dispatcher's slots. `release`, once the request is over, leaves
 * nothing of it on either. Not `AbortSignal.any([timeout, shutdown])`: Node 20 keeps an entry on the
 * shutdown signal, which lives as long as the process, for each signal made so, and frees none (65
 * bytes a delivery in a soak, a gigabyte a day at 13,000 a minute).
 */
function attemptSignal (timeout: AbortSignal, shutdown: AbortSignal): { signal: AbortSignal, answered: () => void, release: () => void } {
  const attempt = new AbortController()
  const abort = () => { attempt.abort() }
  if (shutdown.aborted) abort()
  timeout.addEventListener('abort', abort, { once: true })
  shutdown.addEventListener('abort', abort, { once: true })
  const answered = () => { shutdown.removeEventListener('abort', abort) }
  return {
    signal: attempt.signal,
    answered,
    release: () => {
      timeout.removeEventListener('abort', abort)
      answered()
    }
  }
}

/**
 * OpenSSL's error text, as Node puts it in a message ("write EPROTO 80EC…:error:0A00010B:SSL
 * routines:ssl3_get_record:wrong version number:../deps/openssl/…/ssl3_record.c:350:\n"): its reason.
 */
const OPENSSL_ERROR = /:error:[0-9A-F]+:[^:]*:[^:]*:([^:\n]+)/

function failureOf (error: NodeJS.ErrnoException, timeout: AbortSignal): string {
  if (timeout.aborted) return 'no answer within the timeout'
  const tlsReason = OPENSSL_ERROR.exec(error.message)?.[1]
  const message = tlsReason === undefined ? error.message : `TLS failed: ${tlsReason}`
  const text = error.code !== undefined && !message.includes(error.code) ? `${error.code}: ${message}` : message
  return text.slice(0, MAX_ERROR_LENGTH)
}
