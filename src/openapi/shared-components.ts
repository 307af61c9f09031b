/**
 * Turns the responses and parameters that operations repeat into reusable components of the OpenAPI
 * document, each operation's copy becoming a `$ref`. Routes keep their schemas inline (Fastify
 * validates and serializes with them), so the sharing is done on the generated document.
 */

type Json = Record<string, unknown>
interface Operation { 'x-stability'?: string, parameters?: Json[], responses?: Record<string, Json> }
type Paths = Record<string, Record<string, Operation>>

/** The reusable response of each error status, by its name in components.responses. */
const ERROR_RESPONSE_NAMES: Record<string, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  408: 'RequestTimeout',
  410: 'Gone',
  409: 'Conflict',
  413: 'ContentTooLarge',
  414: 'UriTooLong',
  415: 'UnsupportedMediaType',
  417: 'ExpectationFailed',
  422: 'UnprocessableContent',
  429: 'TooManyRequests',
  431: 'HeaderTooLarge',
  500: 'InternalError',
  501: 'NotImplemented',
  503: 'ServiceUnavailable'
}

function operationsOf (paths: Paths): Array<{ path: string, method: string, operation: Operation }> {
  return Object.entries(paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ path, method, operation })))
}

const pascalCase = (words: string) => words.replace(/(?:^|[-_\s])(\w)/g, (_match, letter: string) => letter.toUpperCase())

/**
 * One reusable response per error status: the answer most operations give (an operation's own example
 * of that status, such as its 404 message, keeps its response inline, as do HEAD operations, whose
 * answers have no body). The operations marked `x-stability` share one of their own, named
 * `<name>WithStability`: their answers also declare API-Stability. Mutates `paths`.
 */
export function shareErrorResponses (paths: Paths): Record<string, Json> {
  const components: Record<string, Json> = {}
  for (const [status, name] of Object.entries(ERROR_RESPONSE_NAMES)) {
    for (const marked of [false, true]) {
      const operations = operationsOf(paths).filter(({ method, operation }) => method !== 'head' && (operation['x-stability'] !== undefined) === marked)
      const shared = mostCommon(operations.map(({ operation }) => operation.responses?.[status]).filter((response) => response !== undefined))
      if (shared === undefined) continue
      // One that does not carry API-Stability (an answer given before any route's hooks run) is the unmarked one.
      const component = marked && JSON.stringify(shared) !== JSON.stringify(components[name]) ? `${name}WithStability` : name
      components[component] = shared
      for (const { operation } of operations) {
        const response = operation.responses?.[status]
        if (response !== undefined && JSON.stringify(response) === JSON.stringify(shared)) operation.responses![status] = { $ref: `#/components/responses/${component}` }
      }
    }
  }
  return components
}

/**
 * Every parameter as a reusable component, named after it (`Limit`), or after its resource and it
 * (`PetsLimit`, `OrdersLimit`) where resources describe it differently. Mutates `paths`.
 */
export function shareParameters (paths: Paths): Record<string, Json> {
  const variants = new Map<string, Map<string, { parameter: Json, resource: string }>>()
  for (const { path, operation } of operationsOf(paths)) {
    for (const parameter of operation.parameters ?? []) {
      const byText = variants.get(String(parameter.name)) ?? new Map<string, { parameter: Json, resource: string }>()
      variants.set(String(parameter.name), byText)
      if (!byText.has(JSON.stringify(parameter))) byText.set(JSON.stringify(parameter), { parameter, resource: pascalCase(path.split('/').filter((segment) => !segment.startsWith('{')).at(-1)!) })
    }
  }
  const components: Record<string, Json> = {}
  const names = new Map<string, string>()
  for (const [parameterName, byText] of variants) {
    for (const [text, { parameter, resource }] of byText) {
      const name = byText.size === 1 ? pascalCase(parameterName) : `${resource}${pascalCase(parameterName)}`
      if (name in components) throw new Error(`two different parameters would be the component ${name}; make them alike or rename one`)
      components[name] = parameter
      names.set(text, name)
    }
  }
  for (const { operation } of operationsOf(paths)) {
    if (operation.parameters !== undefined) operation.parameters = operation.parameters.map((parameter) => ({ $ref: `#/components/parameters/${names.get(JSON.stringify(parameter))!}` }))
  }
  return components
}

/** The value most often repeated (the first seen, on a tie). */
function mostCommon (values: Json[]): Json | undefined {
  const counts = new Map<string, { value: Json, count: number }>()
  for (const value of values) {
    const entry = counts.get(JSON.stringify(value)) ?? { value, count: 0 }
    entry.count++
    counts.set(JSON.stringify(value), entry)
  }
  let best: { value: Json, count: number } | undefined
  for (const entry of counts.values()) if (best === undefined || entry.count > best.count) best = entry
  return best?.value
}
