import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'data/**', 'test-results/**'] }),
  {
    rules: {
      // A TypeBox schema and its static type share one name (`Pet` the value, `Pet` the type): the
      // "one source of truth" idiom. tsc still rejects real redeclarations.
      '@typescript-eslint/no-redeclare': 'off'
    }
  }
]
