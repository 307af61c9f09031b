/**
 * Wraps a schema compiler so that each distinct schema (by its JSON text) is compiled once per process.
 * Routes repeat schemas (an id parameter, the Error response of every status), and each app built in
 * the process (the tests build hundreds) would compile them all again: compiling was most of a build.
 */
export function oncePerSchema<T> (compile: (schema: unknown) => T): (schema: unknown) => T {
  const compiled = new Map<string, T>()
  return (schema) => {
    const key = JSON.stringify(schema)
    let result = compiled.get(key)
    if (result === undefined) {
      result = compile(schema)
      compiled.set(key, result)
    }
    return result
  }
}
