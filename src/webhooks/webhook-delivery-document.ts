import { DEFAULT_RETRY_SCHEDULE } from './retry-schedule.js'

const header = (name: string, description: string, example: string) => ({
  name, in: 'header', required: true, description, schema: { type: 'string' }, example
})

/**
 * The request a receiver gets, as the OpenAPI 3.1 `webhooks` object describes it: what a subscriber
 * implements, beside the operations it calls.
 */
export const WEBHOOK_DELIVERY_DOCUMENT = {
  event: {
    post: {
      operationId: 'receiveEvent',
      summary: 'An event delivered to a subscriber (beta)',
      description: 'POSTed to each enabled subscription whose types include the event\'s, one at a time in event id order. ' +
        'Verify it with a Standard Webhooks library and the subscription\'s secret. Any 2xx within 10 s acknowledges it; ' +
        `anything else is retried after ${DEFAULT_RETRY_SCHEDULE.replaceAll(',', ', ')} (by default), then the subscription is disabled; 410 disables it at once.`,
      tags: ['webhooks'],
      'x-stability': 'beta',
      parameters: [
        header('webhook-id', 'The same on every attempt at this event for this subscription, and unique across installations: drop repeats by it', 'msg_Xq3vT9kLm2Pw_7_1042'),
        header('webhook-timestamp', 'When the attempt was made, in seconds since the Unix epoch', '1795774530'),
        header('webhook-signature', '`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` under the secret; two, space-separated, for 24 hours after a rotation',
          'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=')
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Event' } } } },
      responses: {
        '2XX': { description: 'Delivered' },
        410: { description: 'The receiver is gone: the subscription is disabled' },
        default: { description: 'Not delivered: retried on the schedule' }
      }
    }
  }
}
