import { Tokenizer, TokenType } from '@streamparser/json'

/**
 * The name of the first member a JSON text names twice in one object, if any. JSON.parse keeps the
 * last; other parsers keep the first or refuse the text: a proxy, a log or a signature check could
 * read another value than the one stored. `text` is known to be JSON (parsed already).
 */
export function repeatedMemberName (text: string, parsed: unknown): string | undefined {
  // Each member takes one colon outside strings: a text with no more colons than the value has
  // members (the common case, one count) names none twice, without reading it again token by token.
  return colonsIn(text) > membersIn(parsed) ? firstRepeatedMemberName(text) : undefined
}

function colonsIn (text: string): number {
  let colons = 0
  for (let i = text.indexOf(':'); i !== -1; i = text.indexOf(':', i + 1)) colons++
  return colons
}

function membersIn (value: unknown): number {
  if (value === null || typeof value !== 'object') return 0
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + membersIn(item), 0)
  let members = 0
  for (const member of Object.values(value)) members += 1 + membersIn(member)
  return members
}

function firstRepeatedMemberName (text: string): string | undefined {
  // Per container open: an object's member names so far, or undefined for an array.
  const open: Array<Set<string> | undefined> = []
  let nameNext = false
  let repeated: string | undefined
  const tokenizer = new Tokenizer()
  tokenizer.onToken = ({ token, value }) => {
    const names = open.at(-1)
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      open.push(token === TokenType.LEFT_BRACE ? new Set() : undefined)
      nameNext = token === TokenType.LEFT_BRACE
    } else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) {
      open.pop()
    } else if (token === TokenType.COMMA) {
      nameNext = names !== undefined
    } else if (nameNext && names !== undefined) {
      const name = String(value)
      if (names.has(name)) repeated ??= name
      names.add(name)
      nameNext = false
    }
  }
  tokenizer.write(text)
  tokenizer.end()
  return repeated
}
