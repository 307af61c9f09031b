import { ERROR_CATALOG } from '../errors.js'
import { methodNotAllowed, ROUTE_METHODS } from '../plugins/error-handler.js'

type Json = Record<string, unknown>
interface Operation { operationId?: string, summary?: string, description?: string, responses?: Record<string, Json> }
type Paths = Record<string, Record<string, Operation>>

/**
 * The HEAD twin of each GET operation (Fastify serves one for every GET route): the same answers
 * without their bodies. @fastify/swagger names it `<operationId>-head`. Mutates `paths`.
 */
export function describeHeadOperations (paths: Paths): void {
  for (const item of Object.values(paths)) {
    const head = item.head
    if (head === undefined) continue
    head.summary = `${head.summary ?? ''} (headers only)`.trim()
    head.description = `The headers of \`GET\` on this path, without its body.${head.description === undefined ? '' : `\n\n${head.description}`}`
    for (const response of Object.values(head.responses ?? {})) delete response.content
  }
}

/**
 * The 405 that every other method on a path gets, declared on each of the path's operations (OpenAPI
 * has no place for methods a path does not serve), with its `Allow` header and that path's real
 * answer as the example. Mutates `paths`.
 */
export function declareMethodNotAllowed (paths: Paths): void {
  for (const item of Object.values(paths)) {
    const allowed = ROUTE_METHODS.filter((method) => item[method.toLowerCase()] !== undefined)
    const example = methodNotAllowed(ROUTE_METHODS.find((method) => !allowed.includes(method))!, allowed).toBody()
    for (const operation of Object.values(item)) {
      operation.responses ??= {}
      operation.responses[405] = {
        description: `${ERROR_CATALOG.method_not_allowed.meaning} (the answer to any method this path does not serve)`,
        headers: { Allow: {} },
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example } }
      }
    }
  }
}
