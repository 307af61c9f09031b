import assert from 'node:assert/strict'
import { test } from 'node:test'
import stringWidth from 'string-width'
import { plainTable } from '../../src/cli/plain-table.js'

test('a column starts at the same place on the terminal in every line, whatever the width of the characters before it', () => {
  // An emoji and CJK characters take two columns each; a combining accent takes none; ZWJ sequences one emoji.
  const names = ['Rex', '🐶 dog', '漢字の名前', 'e\u0301cole', '👩‍👩‍👧 family']
  const table = plainTable(['NAME', 'KEY'], names.map((name) => [name, 'ps_…abcd']))
  const lines = table.split('\n')
  const starts = lines.map((line) => stringWidth(line.slice(0, line.lastIndexOf(line.startsWith('NAME') ? 'KEY' : 'ps_…'))))
  assert.equal(new Set(starts).size, 1, table)
  assert.equal(starts[0], stringWidth('漢字の名前') + 2, 'as wide as the widest name, then two spaces')
})
