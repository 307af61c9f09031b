import type { FastifySerializerCompiler } from 'fastify'
import fastJsonStringify from 'fast-json-stringify'
import { oncePerSchema } from './validation/once-per-schema.js'

const compile = oncePerSchema((schema) => fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]))

/** How the API serializes responses: Fastify's own compiler (fast-json-stringify), each distinct schema compiled once. */
export const apiSerializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => compile(schema)
