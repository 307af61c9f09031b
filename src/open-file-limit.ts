import { readFileSync } from 'node:fs'

/** The process's soft limit on open files, where the system tells it (Linux's /proc); undefined elsewhere, or unlimited. */
export function openFileLimit (): number | undefined {
  try {
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]
    return limit === undefined ? undefined : Number(limit)
  } catch {
    return undefined
  }
}
