import { Type } from 'typebox'

/** The request headers of a create that can be retried safely. */
export const IdempotencyKeyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[\\x20-\\x7E]+$',
    description: 'Makes retries safe: the first request with this key (per API key, for 24 hours) is processed; ' +
      'a retry with the same body gets the same answer with `Idempotent-Replayed: true` and creates nothing'
  }))
})
