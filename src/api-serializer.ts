import type { FastifySerializerCompiler } from 'fastify'
import fastJsonStringify from 'fast-json-stringify'
import { compiledOnFirstUse } from './validation/compiled-on-first-use.js'
import { oncePerSchema } from './validation/once-per-schema.js'

const compile = oncePerSchema((schema) => compiledOnFirstUse(schema, (copy) => fastJsonStringify(copy as Parameters<typeof fastJsonStringify>[0])))

/** How the API serializes responses: Fastify's own compiler (fast-json-stringify), each distinct schema compiled once. */
export const apiSerializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => compile(schema)
