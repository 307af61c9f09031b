import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
// A CommonJS module: its function is `default` of the module object TypeScript sees.
import ajvFormats from 'ajv-formats'
import type { Ajv, ValidateFunction } from 'ajv'
import { OpenAPIBackend, ValidationContext, type Document, type Operation } from 'openapi-backend'
import { GENERAL_HEADERS, STABILITY_HEADER } from '../src/openapi/response-headers.js'

/** Headers of HTTP itself, which an OpenAPI document does not declare. */
const HTTP_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding'])
// Described once in the document's info rather than on each response (see response-headers.ts).
const UNDECLARED = new Set([...HTTP_HEADERS, ...Object.keys(GENERAL_HEADERS), STABILITY_HEADER])

/** A served document's validator, and its operations by method and path template (`get /pets/{petId}`). */
interface Contract {
  api: OpenAPIBackend
  operations: Map<string, Operation>
  /** The check of an answer's headers, by operation and status: see `headersCheck`. */
  headerChecks: Map<string, ValidateFunction>
  headerAjv: Ajv
  /** The check of a JSON body, by its schema (one Error schema serves every error of every operation). */
  bodyChecks: WeakMap<object, ValidateFunction>
  bodyAjv: Ajv
}

const contracts = new Map<string, Promise<Contract>>()

/**
 * openapi-backend (a third-party validator) on a served document; compiled once per distinct document.
 * `quick` skips its check of the document itself, which knows only OpenAPI 3.0's schema (Redocly's
 * lint checks it as 3.1: test/app/openapi-lint.test.ts).
 */
function contractOf (document: object): Promise<Contract> {
  const text = JSON.stringify(document)
  let contract = contracts.get(text)
  if (contract === undefined) {
    const api = new OpenAPIBackend({
      definition: structuredClone(document) as Document,
      apiRoot: '/v1',
      ignoreTrailingSlashes: false,
      strict: true,
      quick: true,
      customizeAjv: (ajv) => {
        // Bodies reach the validator through JSON.parse, which rounds int64's largest value up to 2^63.
        ajv.addFormat('int64', { type: 'number', validate: (value: number) => Number.isInteger(value) && Math.abs(value) <= 2 ** 63 })
        // Unknown to openapi-backend's Ajv, these formats were ignored, with a warning per schema.
        ajvFormats.default(ajv, ['date-time', 'uri-reference'])
        return ajv
      }
    })
    contract = api.init().then(() => ({
      api,
      operations: new Map(api.router.getOperations().map((operation) => [`${operation.method} ${operation.path}`, operation])),
      headerChecks: new Map(),
      headerAjv: api.validator.getAjv(ValidationContext.ResponseHeaders, { coerceTypes: true }),
      bodyChecks: new WeakMap(),
      bodyAjv: api.validator.getAjv(ValidationContext.Response)
    }))
    contracts.set(text, contract)
  }
  return contract
}

interface Response { headers?: Record<string, { required?: boolean, schema?: object }>, content?: Record<string, { schema?: object }> }

// The checks below are openapi-backend's, each compiled with its Ajv where it is first needed: its own
// `validateResponseHeaders` and `validateResponse` compile, at an operation's first answer, the checks
// of every status it declares (four of the headers' each): a third of a test file's CPU. The schemas
// go to Ajv as served: none is recursive (which openapi-backend would first rewrite) or has an `$id`
// (which one Ajv takes once).

/** openapi-backend's check of response headers in its `Subset` mode: every header sent declared, each value as its schema says. */
function headersCheck ({ headerChecks, headerAjv }: Contract, operation: Operation, status: number, response: Response): ValidateFunction {
  return compiledOnce(headerChecks, `${operation.operationId} ${status}`, () => {
    const properties = Object.fromEntries(Object.entries(response.headers ?? {}).flatMap(([name, { schema }]) => schema === undefined ? [] : [[name.toLowerCase(), schema]]))
    return headerAjv.compile({ type: 'object', properties, additionalProperties: false })
  })
}

/** openapi-backend's check of a JSON body against its schema. */
function bodyCheck ({ bodyChecks, bodyAjv }: Contract, schema: object): ValidateFunction {
  return compiledOnce(bodyChecks, schema, () => bodyAjv.compile(schema))
}

function compiledOnce<Key> (checks: { get: (key: Key) => ValidateFunction | undefined, set: (key: Key, check: ValidateFunction) => unknown }, key: Key, compile: () => ValidateFunction): ValidateFunction {
  let check = checks.get(key)
  if (check === undefined) {
    check = compile()
    checks.set(key, check)
  }
  return check
}

interface Answer {
  method: string
  url: string
  /** The route Fastify chose, e.g. `/v1/pets/:petId`; undefined when none matched. */
  route: string | undefined
  status: number
  headers: Record<string, unknown>
  body: string
}

/** What is wrong with an answer against the document, as sentences; empty when it keeps to it. */
function contractViolations (contract: Contract, answer: Answer): string[] {
  const { api, operations } = contract
  const url = new URL(answer.url, 'http://127.0.0.1')
  if (!url.pathname.startsWith('/v1/') || url.pathname === '/v1/openapi.json') return []
  // The operation of the route the server chose (so `/v1/pets/` is getPet with an empty id, as served);
  // for no route, another method on a documented path, whose operations declare that answer (405).
  const template = answer.route?.replace(/^\/v1/, '').replace(/:(\w+)/g, '{$1}')
  const operation = template === undefined ?
      ['get', 'post', 'patch'].map((method) => api.router.matchOperation({ method, path: url.pathname, headers: {} })).find((found) => found !== undefined) :
      operations.get(`${answer.method.toLowerCase()} ${template}`)
  if (operation === undefined) return template === undefined ? [] : [`${answer.method} ${answer.route}: the route is not in the document`]
  const where = `${answer.method} ${url.pathname} ${answer.status} (${operation.operationId})`
  const response = (operation.responses as Record<string, Response>)[String(answer.status)]
  if (response === undefined) return [`${where}: the status is not declared`]

  const violations: string[] = []
  const headers = Object.fromEntries(Object.entries(answer.headers).flatMap(([name, value]) => UNDECLARED.has(name.toLowerCase()) ? [] : [[name.toLowerCase(), value]]))
  const headerCheck = headersCheck(contract, operation, answer.status, response)
  headerCheck(headers)
  for (const error of headerCheck.errors ?? []) violations.push(`${where}: headers${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`)
  // The check above refuses undeclared headers; a header declared `required` must also be there.
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    if (header.required === true && answer.headers[name.toLowerCase()] === undefined) violations.push(`${where}: the required header ${name} is missing`)
  }

  // Node sends no body to a HEAD request, whatever the handler gave.
  if (answer.method === 'HEAD') return violations
  const contentTypes = Object.keys(response.content ?? {})
  if (contentTypes.length === 0) {
    if (answer.body !== '') violations.push(`${where}: a body where the document declares none`)
    return violations
  }
  const mediaType = String(answer.headers['content-type'] ?? '').split(';')[0]!.trim()
  if (!contentTypes.includes(mediaType)) return [...violations, `${where}: content type ${mediaType} is not declared (${contentTypes.join(', ')})`]
  // An event stream is written past Fastify (its tests read it); only JSON bodies are checked here.
  if (mediaType !== 'application/json') return violations
  const schema = response.content!['application/json']!.schema
  if (schema === undefined) return violations
  const check = bodyCheck(contract, schema)
  check(JSON.parse(answer.body))
  for (const error of check.errors ?? []) violations.push(`${where}: body${error.instancePath} ${error.message}`)
  return violations
}

/**
 * Checks every answer the app gives during the test against the OpenAPI document it serves, body and
 * headers, with a third-party validator: the test fails at its end on an undeclared status, header or
 * content type, or a body or header its schema refuses. Must be called before the app is ready.
 */
export function checkContract (t: TestContext, app: FastifyInstance, afterTest: (check: () => Promise<void>) => void): void {
  const bodies = new WeakMap<FastifyRequest, string>()
  const answers: Answer[] = []
  app.addHook('onSend', async (request, _reply, payload) => {
    bodies.set(request, typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString() : '')
    return payload
  })
  // Only recorded here: validating (and compiling the validator) while requests run would slow them.
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    answers.push({ method: request.method, url: request.url, route: request.routeOptions.url, status: reply.statusCode, headers: reply.getHeaders(), body: bodies.get(request) ?? '' })
  })
  afterTest(async () => {
    if (answers.length === 0) return
    const contract = await contractOf(app.swagger())
    const violations = answers.flatMap((answer) => contractViolations(contract, answer))
    assert.deepEqual(violations, [], `${t.name}: answers that break the OpenAPI document`)
  })
}
