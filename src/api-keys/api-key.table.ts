import type { Generated, Selectable } from 'kysely'

/** The `api_keys` table: a key is kept only as the SHA-256 of its text, never the text itself. */
export interface ApiKeyTable {
  id: Generated<bigint>
  name: string
  /** Hex SHA-256 of the whole key. */
  key_hash: string
  /** What a person may see of the key: its prefix and last four characters. */
  key_hint: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

export type ApiKeyRow = Selectable<ApiKeyTable>
