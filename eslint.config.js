import js from '@eslint/js'
import stylistic from '@stylistic/eslint-plugin'
import globals from 'globals'
import tseslint from 'typescript-eslint'

// JavaScript Standard Style, as neostandard applies it, for TypeScript.
export default tseslint.config(
  { ignores: ['dist/**', 'data/**', 'test-results/**', '.test-build/**', 'node_modules/**', 'src/client/schema.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  stylistic.configs.customize({ semi: false, quotes: 'single', indent: 2, commaDangle: 'never', braceStyle: '1tbs' }),
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@stylistic/space-before-function-paren': ['error', 'always'],
      '@stylistic/arrow-parens': ['error', 'always'],
      '@stylistic/operator-linebreak': ['error', 'after'],
      '@stylistic/multiline-ternary': 'off',
      '@stylistic/max-statements-per-line': 'off',
      '@stylistic/quote-props': ['error', 'as-needed'],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'never' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // Ajv schemas and JSON from tests are untyped on purpose at those edges.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }]
    }
  }
)
