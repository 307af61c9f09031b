import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname } from 'node:path'

/**
 * Makes a folder (the store's, a backup's) and those above it that are missing, one at a time: Node's
 * recursive mkdir retries for ever where the kernel answers ENOENT though the parent exists (under
 * /proc), and answers ENOENT where the parent cannot be written (EROFS). Names the file that stands
 * in the way, which mkdir's EEXIST and ENOTDIR do not.
 */
export function makeFolder (folder: string): void {
  const file = fileOnPath(folder)
  if (file !== undefined) throw Object.assign(new Error(`${file} is a file, not a folder`), { code: 'ENOTDIR' })
  const missing: string[] = []
  for (let path = folder; !existsSync(path); path = dirname(path)) missing.unshift(path)
  for (const path of missing) {
    try {
      mkdirSync(path)
    } catch (error) {
      // Made meanwhile by another process (the workers of WEB_CONCURRENCY start together).
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(path).isDirectory()) throw error
    }
  }
}

/** The nearest of `folder` and the folders above it that exists, when it is not a folder. */
function fileOnPath (folder: string): string | undefined {
  for (let path = folder; ; path = dirname(path)) {
    if (existsSync(path)) return statSync(path).isDirectory() ? undefined : path
    if (dirname(path) === path) return undefined
  }
}
