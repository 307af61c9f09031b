/** What a key may do, after GitHub's fine-grained tokens and Stripe's restricted keys. */
export const SCOPES = [
  'pets:read', 'pets:write', 'categories:read', 'categories:write', 'orders:read', 'orders:write', 'events:read', 'webhooks:read', 'webhooks:write'
] as const
export type Scope = typeof SCOPES[number]

/** The shorthands a key may hold, kept as written so that a key holding `*` also gets scopes added later. */
const SHORTHANDS: Record<string, readonly Scope[]> = {
  '*': SCOPES,
  '*:read': SCOPES.filter((scope) => scope.endsWith(':read'))
}

/** What a key without an explicit list holds: every scope, as every key made before scopes did. */
const EVERY_SCOPE = '*'

/** A scope that does not exist, named with the ones that do. */
export class UnknownScopeError extends Error {
  override name = 'UnknownScopeError'

  constructor (scope: string) {
    super(`unknown scope "${scope}": the scopes are ${[...SCOPES, ...Object.keys(SHORTHANDS)].join(', ')}`)
  }
}

/** Scopes as given (repeated, shorthands) checked and written as a key keeps them: sorted, space-separated. */
export function scopeList (given: readonly string[]): string {
  for (const scope of given) if (!(SCOPES as readonly string[]).includes(scope) && SHORTHANDS[scope] === undefined) throw new UnknownScopeError(scope)
  if (given.length === 0 || given.includes(EVERY_SCOPE)) return EVERY_SCOPE
  return [...new Set(given)].sort().join(' ')
}

/** The scopes a stored list grants, shorthands expanded. */
export function grantedScopes (list: string): ReadonlySet<Scope> {
  return new Set(list.split(' ').flatMap((scope) => SHORTHANDS[scope] ?? [scope as Scope]))
}
