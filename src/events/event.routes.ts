import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { OutgoingHttpHeaders } from 'node:http'
import type { preValidationHookHandler } from 'fastify'
import { Type } from 'typebox'
import type { Db } from '../db/database.js'
import { ApiError, errorExample, errorResponses, type ErrorResponse } from '../errors.js'
import { countHeaderLines, repeatedHeader } from '../header-lines.js'
import { responseHeaders } from '../openapi/response-headers.js'
import { bearerToken } from '../plugins/auth.js'
import type { RecordAnswer } from '../plugins/metrics.js'
import { sendJson } from '../send-json.js'
import { findEventsInSteps, findLastEventId, findOldestEventId, findPrunedThrough } from './event.repository.js'
import type { EventStreams } from './event-streams.js'
import { DEFAULT_EVENTS_PER_PAGE, EventList, ListEventsQuery, StreamEventsHeaders, StreamEventsQuery, type EventType } from './event.schemas.js'

export interface EventRoutesOptions {
  db: Db
  streams: EventStreams
  retentionDays: number
  /** Ids of the log one read of a page walks at most (see findEventsInSteps). */
  readStepIds: number
  /** Turns a path under /v1 into the URL clients should follow. */
  apiUrl: (path: string) => string
  /** Counts, times and logs an answer: a stream its client leaves ends without Fastify's hooks and its log. */
  recordAnswer: RecordAnswer
}

const STREAM_EXAMPLE = 'id: 1042\nevent: pet.created\ndata: {"id":1042,"type":"pet.created","occurredAt":"2026-11-24T10:15:30.000Z",' +
  '"data":{"id":42,"name":"Rex","categoryId":3,"status":"available"}}\n\n: heartbeat\n\n'

const TOO_MANY_STREAMS: ErrorResponse = {
  status: 429,
  description: 'Too many requests, or the key holds as many open streams as it may (`MAX_STREAMS_PER_KEY`)',
  code: 'rate_limited',
  example: 'This API key holds 5 open event streams, the most it may; close one first',
  // Sent when the rate limit refuses it, not for the streams a key holds (which end when closed).
  headers: ['Retry-After']
}

const EVENTS_EXPIRED: ErrorResponse = {
  status: 410,
  description: 'Events after `after` are no longer kept: read the current state, then continue from the oldest event kept',
  code: 'events_expired',
  example: 'Events after 41 are no longer kept (events are kept 30 days); the oldest kept is 1042: read the current state, then continue with after=1041'
}

const TYPE_INVALID = errorExample(400, 'Query parameter `type` must be one of pet.created, pet.status_changed, category.created, order.placed, order.approved, order.delivered, order.cancelled')

// `type` may be given once or repeated: once, the query string parser makes it a string.
const typesAsList: preValidationHookHandler = (request, _reply, done) => {
  const query = request.query as { type?: unknown }
  if (typeof query.type === 'string') query.type = [query.type]
  done()
}

// Node joins its lines into one value ("5, 6"), which would be told it is no integer.
const oneLastEventId: preValidationHookHandler = (request, _reply, done) => {
  const lines = request.headers['last-event-id'] === undefined ? 0 : countHeaderLines(request.raw.rawHeaders, 'last-event-id')
  done(lines > 1 ? repeatedHeader('Last-Event-ID', lines) : undefined)
}

/** The event log (beta), as a feed read page by page and as a live stream. */
export const eventRoutes: FastifyPluginAsyncTypebox<EventRoutesOptions> = async (app, { db, streams, retentionDays, readStepIds, apiUrl, recordAnswer }) => {
  /** Throws 410 events_expired when events after `after` were deleted for their age; else gives the last id deleted. */
  const requireKept = async (after: bigint | undefined): Promise<bigint> => {
    const prunedThrough = await findPrunedThrough(db)
    if (after !== undefined && after < prunedThrough) throw await eventsExpired(db, after, prunedThrough, retentionDays)
    return prunedThrough
  }
  /**
   * Throws 400 when `after` is past every event written (the newest kept, or the last deleted):
   * read after it, a log would answer nothing until its ids passed it, and the events meanwhile would
   * be skipped without a word.
   */
  const requireWritten = async (after: bigint, name: string): Promise<void> => {
    const newest = await findLastEventId(db)
    if (after > newest) {
      throw new ApiError(400, 'validation_failed', `${name} ${after} is past the newest event written (${newest}): it is no position in this store's event log ` +
        `(another store's, or one restored from a backup); read the current state, then continue with after=${newest}`)
    }
  }

  /**
   * A page of the log after `after`, or from its first event kept, read in steps (findEventsInSteps)
   * from there: none of them walks the deleted part of the log. A deletion while the steps are read
   * (seen after them) could have taken events from the page: after `after`, that is a 410, as any read
   * after an event deleted. From the first kept, the page keeps its events past the deletion's end:
   * deletions take the oldest, so every event past it was there to be read, and the page has no gap.
   */
  const readKeptPage = async (after: bigint | undefined, types: readonly EventType[] | undefined, limit: number) => {
    for (;;) {
      // After `after`, a 410 before any step; and after them, at the next turn of this loop.
      const prunedThrough = await requireKept(after)
      const start = after ?? prunedThrough
      const page = await findEventsInSteps(db, { afterId: start, types, limit }, readStepIds)
      const deletedThrough = await findPrunedThrough(db)
      if (deletedThrough <= start) return page
      if (after !== undefined) continue
      const kept = page.events.filter((event) => event.id > deletedThrough)
      // None left, and more to come: read again from the deletion's end.
      if (kept.length > 0 || !page.more) return { events: kept, more: page.more }
    }
  }

  app.get('/events', {
    config: { scope: 'events:read' },
    schema: {
      'x-stability': 'beta',
      tags: ['events'],
      operationId: 'listEvents',
      summary: 'Read the event log (beta)',
      description: 'Events in ascending id order: every change to a pet, a category or an order, recorded in the same transaction ' +
        'as the change. Keep the id of the last event handled and read `after` it; ids become visible in increasing order, ' +
        `so no event is skipped. When more follow, the response has a \`Link\` header with \`rel="next"\`. Events are kept ${daysOf(retentionDays)}.`,
      querystring: ListEventsQuery,
      response: {
        200: { ...EventList, description: 'A page of events', headers: responseHeaders('Link') },
        ...errorResponses(TYPE_INVALID, 401, 403, EVENTS_EXPIRED, 429, 500, 503)
      }
    },
    preValidation: typesAsList
  }, async (request, reply) => {
    const { after, type: types, limit = DEFAULT_EVENTS_PER_PAGE } = request.query
    const { events, more } = await readKeptPage(after, types, limit)
    // A page with events shows `after` was written; only an empty one needs a look.
    if (after !== undefined && events.length === 0) await requireWritten(after, '`after`')
    if (more) reply.header('link', nextEventsLink(apiUrl, events.at(-1)!.id, limit, types))
    return sendJson(reply, `[${events.map((event) => event.json).join(',')}]`)
  })

  app.get('/events/stream', {
    // A HEAD would open a stream that sends nothing.
    exposeHeadRoute: false,
    config: { scope: 'events:read', endless: true },
    schema: {
      'x-stability': 'beta',
      tags: ['events'],
      operationId: 'streamEvents',
      summary: 'Follow the event log live (beta)',
      description: 'Server-Sent Events (`text/event-stream`), the one answer of this API that is not JSON: each event as `id:` (its id), ' +
        '`event:` (its type) and `data:` (the event as listEvents gives it), within a second of its commit on any instance, and a ' +
        '`: heartbeat` comment at least every 15 s. Reconnecting with `Last-Event-ID` (SSE clients send it) or `?after=` resumes with ' +
        'no gap and no duplicate. A reader too far behind gets a final `stream.reset` event and should catch up with listEvents. ' +
        'The key goes in `Authorization` only (browsers: use a fetch-based SSE client); each key may hold a few streams at once. ' +
        'The reference page\'s Try it out shows no stream (it waits for an end that does not come, and holds one of the key\'s streams while the page is open): use `curl -N`.',
      querystring: StreamEventsQuery,
      headers: StreamEventsHeaders,
      response: {
        200: { description: 'The stream, until the client closes it, the key loses access, or the service stops', content: { 'text/event-stream': { schema: Type.String({ examples: [STREAM_EXAMPLE] }) } } },
        ...errorResponses(TYPE_INVALID, 401, 403, EVENTS_EXPIRED, TOO_MANY_STREAMS, 500, 503)
      }
    },
    preValidation: [typesAsList, oneLastEventId]
  }, async (request, reply) => {
    const lastEventId = request.headers['last-event-id']
    const after = lastEventId ?? request.query.after
    if (!streams.reserve(request.apiKeyId)) throw new ApiError(429, 'rate_limited', `This API key holds ${streams.maxPerKey} open event streams, the most it may; close one first`)
    let start: bigint
    try {
      await requireKept(after)
      if (after !== undefined) await requireWritten(after, lastEventId === undefined ? '`after`' : '`Last-Event-ID`')
      start = after ?? await findLastEventId(db)
    } catch (error) {
      streams.release(request.apiKeyId)
      throw error
    }
    const types = request.query.type === undefined ? undefined : new Set(request.query.type)
    reply.header('content-type', 'text/event-stream; charset=utf-8')
    reply.hijack()
    // Fastify counts and logs the stream (onResponse) once it is ended here; one its client leaves, it never sees.
    reply.raw.once('close', () => { if (!reply.raw.writableFinished) recordAnswer(request, reply) })
    reply.raw.writeHead(200, reply.getHeaders() as OutgoingHttpHeaders)
    reply.raw.write(': connected\n\n')
    // Authentication accepted this header: it holds a key.
    streams.open(reply.raw, { apiKeyId: request.apiKeyId, token: bearerToken(request.headers.authorization)!, types, after: start })
  })
}

function daysOf (count: number): string {
  return count === 1 ? '1 day' : `${count} days`
}

async function eventsExpired (db: Db, after: bigint, prunedThrough: bigint, retentionDays: number): Promise<ApiError> {
  const oldest = await findOldestEventId(db)
  const resume = oldest === undefined ? `no event is kept now: read the current state, then continue with after=${prunedThrough}` : `the oldest kept is ${oldest}: read the current state, then continue with after=${oldest - 1n}`
  return new ApiError(410, 'events_expired', `Events after ${after} are no longer kept (events are kept ${daysOf(retentionDays)}); ${resume}`)
}

function nextEventsLink (apiUrl: (path: string) => string, afterId: bigint, limit: number, types: readonly EventType[] | undefined): string {
  const query = new URLSearchParams({ after: String(afterId), limit: String(limit) })
  for (const type of types ?? []) query.append('type', type)
  return `<${apiUrl(`/events?${query}`)}>; rel="next"`
}
