/** The message of what a `catch` caught: an Error's own, or the thrown value written out. */
export function messageOf (error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
