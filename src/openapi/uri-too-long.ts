import { ERROR_CATALOG } from '../errors.js'
import { uriTooLong } from '../plugins/error-handler.js'

type Json = Record<string, unknown>
interface Operation { responses?: Record<string, Json> }
type Paths = Record<string, Record<string, Operation>>

/**
 * The 414 that a path parameter longer than `maxParamLength` gets from the router, before anything
 * else, declared on each operation of a path with a parameter (no route declares it, as none sees
 * it). Mutates `paths`.
 */
export function declareUriTooLong (paths: Paths, maxParamLength: number): void {
  const example = uriTooLong(maxParamLength).toBody()
  for (const [path, item] of Object.entries(paths)) {
    if (!path.includes('{')) continue
    for (const operation of Object.values(item)) {
      operation.responses ??= {}
      operation.responses[414] = {
        description: ERROR_CATALOG.uri_too_long.meaning,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example } }
      }
    }
  }
}
