import { basename, isAbsolute, relative } from 'node:path'

/**
 * The command as the user can type it again, for help and hints: `./dist/petstore.mjs` when it runs
 * from the clone in the current folder (as `npm start` runs it), else `petstore`, an installed binary.
 */
export function commandName (): string {
  const script = relative(process.cwd(), process.argv[1] ?? '')
  const inThisFolder = script !== '' && !script.startsWith('..') && !isAbsolute(script)
  return inThisFolder && basename(script) === 'petstore.mjs' ? `./${script}` : 'petstore'
}
