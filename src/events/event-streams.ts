import type { ServerResponse } from 'node:http'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { ApiKeyVerifier } from '../api-keys/api-key.verifier.js'
import type { Db } from '../db/database.js'
import { findEvents, findLastEventId, findPrunedThrough, type StoredEvent } from './event.repository.js'
import type { EventType } from './event.schemas.js'

export interface EventStreamLimits {
  /** How often the log is read for events committed since, by this instance or any other. */
  pollMs: number
  /**
   * The longest a stream stays silent: a comment line is sent at least this often. Also how long a
   * stream that was ended waits for its reader to take the rest before its connection is cut.
   */
  heartbeatMs: number
  /** How often each stream's key is checked again (revoked, expired, scope taken away). */
  keyCheckMs: number
  /** What a stream may have waiting to be sent, in bytes, before it is reset: a slow reader holds no more. */
  maxBufferedBytes: number
  /** Open streams an API key may hold on one instance. */
  maxPerKey: number
  /**
   * The most ids of the log one read of a stream's catch-up walks. Between reads the loop serves
   * others: a type rare in a long log is read in steps, and a client that leaves stops them.
   */
  readStepIds: number
}

interface Stream {
  response: ServerResponse
  apiKeyId: bigint
  /** The key as presented, checked again every keyCheckMs. */
  token: string
  types: ReadonlySet<EventType> | undefined
  /** The same types, as the store is asked for them. */
  typeList: readonly EventType[] | undefined
  /** The same types as one text, alike for the streams that filter alike (see #send). */
  typeKey: string
  /** The id of the last event of the log this stream has passed (sent, or skipped by its type filter). */
  position: bigint
  /** Served by the poller, once caught up with it. */
  live: boolean
}

const CATCH_UP_PAGE = 500
const POLL_PAGE = 1000
/** The longest the poller waits for the live streams' readers to take a page before it resets those behind. */
const PAGE_WAIT_MS = 100

/**
 * The live streams of an instance. One poller reads the event log for what was committed since its
 * last read (by this instance or another on the same store) and hands it to every stream that has
 * caught up; a stream opened after an event id first reads the log from there on its own, then joins.
 * Polling rather than PostgreSQL's LISTEN/NOTIFY: it needs no connection of its own (LISTEN does not
 * work through a transaction-pooling PgBouncer), and its cost, a query a poll, does not grow with
 * the number of streams.
 */
export class EventStreams {
  readonly #streams = new Set<Stream>()
  /** Places taken per key: open streams, and those being set up (see reserve). */
  readonly #perKey = new Map<bigint, number>()
  /** The id of the last event the poller has handed out; known while a stream is open. */
  #head: bigint | undefined
  #headRead: Promise<void> | undefined
  #timers: NodeJS.Timeout[] = []
  #polling = false
  #checkingKeys = false
  #closing = false

  constructor (
    private readonly db: Db,
    private readonly verifier: ApiKeyVerifier,
    private readonly limits: EventStreamLimits,
    /** Told of each failure to read the store, which can come at every poll while it lasts. */
    private readonly onError: (error: unknown) => void
  ) {}

  get maxPerKey (): number {
    return this.limits.maxPerKey
  }

  /**
   * Takes a place for a new stream of this key, before anything is awaited, so that concurrent opens
   * cannot pass the limit together; false when the key holds as many as it may. The place is given
   * back by `release`, or when the stream `open` starts with it ends.
   */
  reserve (apiKeyId: bigint): boolean {
    const taken = this.#perKey.get(apiKeyId) ?? 0
    if (taken >= this.limits.maxPerKey) return false
    this.#perKey.set(apiKeyId, taken + 1)
    return true
  }

  release (apiKeyId: bigint): void {
    const taken = this.#perKey.get(apiKeyId)! - 1
    if (taken === 0) this.#perKey.delete(apiKeyId)
    else this.#perKey.set(apiKeyId, taken)
  }

  /**
   * Serves the events after `after` on `response`, whose headers are written, with the place the key
   * reserved, until the client goes, its key loses access, it falls too far behind, or the service
   * closes. A stream whose client left while it was set up, or that comes as the service closes, ends at once.
   */
  open (response: ServerResponse, { apiKeyId, token, types, after }: { apiKeyId: bigint, token: string, types: ReadonlySet<EventType> | undefined, after: bigint }): void {
    if (!isOpen(response) || this.#closing) {
      this.release(apiKeyId)
      response.end()
      return
    }
    const typeList = types === undefined ? undefined : [...types].sort()
    const stream: Stream = { response, apiKeyId, token, types, typeList, typeKey: typeList?.join(' ') ?? '*', position: after, live: false }
    this.#streams.add(stream)
    response.on('close', () => { this.#remove(stream) })
    if (this.#timers.length === 0) this.#start()
    this.#catchUp(stream).catch((error: unknown) => {
      this.onError(error)
      this.#end(response)
    })
  }

  /** Ends every stream at once, and any that comes later (the service is closing: streams are not waited for). */
  closeAll (): void {
    this.#closing = true
    for (const { response } of this.#streams) this.#end(response)
  }

  /**
   * Reads the log from the stream's position until it has reached what the poller hands out: the
   * stream's types alone, and at most `readStepIds` ids a read, with a turn of the loop between reads.
   * (Read whole and filtered here, a type absent from a million events held an instance on SQLite,
   * whose reads are synchronous, for 1.3 s, and went on after its client left.)
   */
  async #catchUp (stream: Stream): Promise<void> {
    await this.#readHead()
    for (;;) {
      const head = this.#head
      // Its client left during the wait below: the last stream's leaving forgot the head, and a read
      // with none would have gone to the log's end in one go.
      if (head === undefined || !isOpen(stream.response)) return
      const from = stream.position
      const through = from + BigInt(this.limits.readStepIds) < head ? from + BigInt(this.limits.readStepIds) : head
      const { events, more } = await findEvents(this.db, { afterId: from, throughId: through, types: stream.typeList, limit: CATCH_UP_PAGE })
      // Read after the page, as the feed does: events deleted for their age would leave a gap in it.
      const prunedThrough = await findPrunedThrough(this.db)
      if (!isOpen(stream.response)) return
      if (from < prunedThrough) {
        this.#reset(stream)
        return
      }
      this.#send(stream, events)
      // All of the log up to `through`, which is not past `head`, was visible to that read (ids become visible in order).
      if (!more && stream.position < through) stream.position = through
      // Compared with the poller's head as it is now, with no await in between: it hands out what follows.
      if (!more && stream.position >= this.#head!) {
        stream.live = true
        return
      }
      // Reads are microtasks on SQLite: without these waits, a long backlog would all be buffered at
      // once, or a long walk hold the loop.
      if (stream.response.writableNeedDrain) await drainedOrClosed(stream.response)
      else await nextTurn()
    }
  }

  /** Learns where the log ends, once for all the streams that open while no other is. */
  async #readHead (): Promise<void> {
    if (this.#head !== undefined) return
    // Kept only while a stream is open: one whose client left while the head was read was the last,
    // and the next would otherwise poll on from this head, however old by then.
    this.#headRead ??= findLastEventId(this.db).then((id) => { if (this.#streams.size > 0) this.#head ??= id }).finally(() => { this.#headRead = undefined })
    await this.#headRead
  }

  async #poll (): Promise<void> {
    if (this.#polling) return
    this.#polling = true
    try {
      for (;;) {
        const head = this.#head
        if (head === undefined) return // not known yet, or no stream is open
        const { events, more } = await findEvents(this.db, { afterId: head, types: undefined, limit: POLL_PAGE })
        // Every stream closed meanwhile, and maybe others opened from another head: that read is not theirs.
        if (this.#head !== head || events.length === 0) return
        const chunks = new Map<string, Buffer>()
        for (const stream of this.#streams) if (stream.live) this.#send(stream, events, chunks)
        this.#head = events.at(-1)!.id
        await this.#resetThoseBehind()
        if (!more) return
      }
    } finally {
      this.#polling = false
    }
  }

  /**
   * Resets the live streams whose readers have not taken what was sent, past the bound, after a
   * moment (at most PAGE_WAIT_MS) to take it: a page's writes are held to the end of the turn (see
   * write-coalescing), and a reader, however fast, takes them only after it. Counted at once, or
   * with pages sent one after the other, a burst of a few thousand events reset every stream.
   */
  async #resetThoseBehind (): Promise<void> {
    const isBehind = ({ live, response }: Stream) => live && isOpen(response) && response.writableLength > this.limits.maxBufferedBytes
    const behind = [...this.#streams].filter(isBehind)
    if (behind.length === 0) return
    await Promise.all(behind.map(async ({ response }) => { await drainedOrClosed(response, PAGE_WAIT_MS) }))
    // Past the loop's poll for I/O: a wait's timer that came late (the loop was busy) runs before it,
    // and a socket's writes the reader made room for would not be counted yet.
    await nextTurn()
    for (const stream of behind) if (isBehind(stream)) this.#reset(stream)
  }

  /**
   * Writes the events past the stream's position that its filter keeps, as one chunk. `chunks` holds
   * those made of the same events for other streams, by position and filter: the live streams are
   * all at the poller's head, and those that filter alike share one Buffer (written an event at a
   * time to each, streams whose readers stopped each held a copy: docs/benchmarks.md, 7 December).
   */
  #send (stream: Stream, events: readonly StoredEvent[], chunks = new Map<string, Buffer>()): void {
    const { response, position, types } = stream
    if (!isOpen(response) || events.length === 0) return
    const key = `${position} ${stream.typeKey}`
    let chunk = chunks.get(key)
    if (chunk === undefined) {
      let text = ''
      for (const event of events) {
        if (event.id > position && (types === undefined || types.has(event.type))) text += `id: ${event.id}\nevent: ${event.type}\ndata: ${event.json}\n\n`
      }
      chunk = Buffer.from(text)
      chunks.set(key, chunk)
    }
    if (chunk.length > 0) response.write(chunk)
    const last = events.at(-1)!.id
    if (last > position) stream.position = last
  }

  /** Ends a stream that cannot go on (its reader fell behind, or events it was due were deleted), telling it where to resume from the feed. */
  #reset (stream: Stream): void {
    const data = JSON.stringify({
      message: `The stream fell too far behind and was closed: read GET /v1/events?after=${stream.position} to catch up, then open a stream again`,
      after: Number(stream.position)
    })
    stream.live = false
    this.#end(stream.response, `event: stream.reset\ndata: ${data}\n\n`)
  }

  /**
   * Ends a stream, with `last` as what it sends last. A reader that has not taken it all a heartbeat's
   * time later has its connection cut (and resumes with Last-Event-ID): one that never reads again
   * would hold what was sent to it, the bound and more, for as long as it kept the connection.
   */
  #end (response: ServerResponse, last = ''): void {
    // Once is enough: a refused key's stream, say, is looked at again at each check until it closes.
    if (!isOpen(response)) return
    response.end(last)
    const cut = setTimeout(() => { response.destroy() }, this.limits.heartbeatMs).unref()
    response.once('close', () => { clearTimeout(cut) })
  }

  /** Closes the streams whose key was revoked, expired or lost the scope; each key is looked at once. */
  async #checkKeys (): Promise<void> {
    if (this.#checkingKeys) return // the store is slow: the check under way is enough
    this.#checkingKeys = true
    try {
      const byToken = new Map<string, Stream[]>()
      for (const stream of this.#streams) {
        const streams = byToken.get(stream.token)
        if (streams === undefined) byToken.set(stream.token, [stream])
        else streams.push(stream)
      }
      for (const [token, streams] of byToken) {
        const key = await this.verifier.verify(token)
        if (typeof key !== 'object' || !key.scopes.has('events:read')) for (const { response } of streams) this.#end(response)
      }
    } finally {
      this.#checkingKeys = false
    }
  }

  #start (): void {
    const every = (ms: number, task: () => unknown) => setInterval(task, ms).unref()
    this.#timers = [
      every(this.limits.pollMs, () => { this.#poll().catch(this.onError) }),
      every(this.limits.heartbeatMs, () => {
        for (const { response } of this.#streams) if (isOpen(response)) response.write(': heartbeat\n\n')
      }),
      every(this.limits.keyCheckMs, () => { this.#checkKeys().catch(this.onError) })
    ]
  }

  #remove (stream: Stream): void {
    if (!this.#streams.delete(stream)) return
    this.release(stream.apiKeyId)
    if (this.#streams.size > 0) return
    for (const timer of this.#timers) clearInterval(timer)
    this.#timers = []
    this.#head = undefined
  }
}

/** Neither ended by the service nor closed by the client. */
function isOpen (response: ServerResponse): boolean {
  return !response.writableEnded && !response.destroyed
}

/** Resolves when the response can take more, or has closed, or after `timeoutMs` when given. */
async function drainedOrClosed (response: ServerResponse, timeoutMs?: number): Promise<void> {
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      response.off('drain', done)
      response.off('close', done)
      resolve()
    }
    const timer = timeoutMs === undefined ? undefined : setTimeout(done, timeoutMs)
    response.on('drain', done)
    response.on('close', done)
  })
}
