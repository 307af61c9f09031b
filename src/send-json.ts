import type { FastifyReply } from 'fastify'
import type { IdempotentResult } from './idempotency/idempotent-create.js'

/** Sends JSON text the store or an idempotency record already holds, as it is, not through the typed serializer. */
export function sendJson (reply: FastifyReply<any>, json: string): FastifyReply<any> {
  return reply.type('application/json; charset=utf-8').send(json)
}

/** Sends the answer an idempotent create stored, as it was first sent, marked when it is a replay. */
export function sendStoredAnswer (reply: FastifyReply<any>, { response, replayed }: IdempotentResult): FastifyReply<any> {
  reply.code(response.status) // only successful creates are stored
  if (response.location !== null) reply.header('location', response.location)
  if (replayed) reply.header('idempotent-replayed', 'true')
  // Stored as text and sent as stored, so a replay is byte for byte the first answer.
  return sendJson(reply, response.body)
}
