import { basename, isAbsolute, relative } from 'node:path'

/**
 * The command as the user can type it again, for help and hints: the bundle when it runs as itself,
 * `./dist/petstore.mjs` from the clone (as `npm start` runs it), its whole path from any other
 * folder; else `petstore`, an installed binary's link.
 */
export function commandName (): string {
  const script = process.argv[1] ?? ''
  if (basename(script) !== 'petstore.mjs') return 'petstore'
  const fromFolder = relative(process.cwd(), script)
  return shellWord(fromFolder.startsWith('..') || isAbsolute(fromFolder) ? script : `./${fromFolder}`)
}

/** `path` as a shell reads it back: in single quotes when it holds anything but letters, digits and `_./-`. */
function shellWord (path: string): string {
  return /^[\w./-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`
}
