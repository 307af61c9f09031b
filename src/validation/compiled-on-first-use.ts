type Compiled<Fn> = Fn & { errors?: unknown }

/** The compilations not yet made, each of which makes itself and leaves. */
const pending = new Set<() => void>()

/**
 * A schema's validator or serializer, compiled when first called rather than when its route is added:
 * a start of `serve` compiled every route's (Ajv, fast-json-stringify), 0.11 s of its 0.74 s of CPU,
 * mostly for operations and answers the process may never see; now each costs its first call instead
 * (a createPet's first answer came 15 to 20 ms later). It is compiled from a copy of the schema as
 * given, whatever becomes of that object meanwhile. `errors`, which Fastify reads off a validator
 * after a call, is the compiled function's.
 */
export function compiledOnFirstUse<Fn extends (data: any) => unknown> (schema: unknown, compile: (schema: unknown) => Compiled<Fn>): Compiled<Fn> {
  const copy = structuredClone(schema)
  let compiled: Compiled<Fn> | undefined
  const compileNow = () => {
    compiled ??= compile(copy)
    pending.delete(compileNow)
    return compiled
  }
  pending.add(compileNow)
  const call = ((data: unknown) => {
    const fn = compiled ?? compileNow()
    const result = fn(data)
    call.errors = fn.errors
    return result
  }) as Compiled<Fn>
  return call
}

/**
 * Compiles every schema given so far and not yet compiled: a schema that cannot be compiled would
 * otherwise fail only its first request, and the tests call this on a whole app to see them all compile.
 */
export function compileAllNow (): number {
  const compilations = [...pending]
  for (const compileNow of compilations) compileNow()
  return compilations.length
}
