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
  /** The scopes the key holds, space-separated, shorthands as written (see scopes.ts). */
  scopes: Generated<string>
  /** When the key stops working (RFC 3339, UTC); null: never. */
  expires_at: string | null
  /** The key this one replaced (`keys rotate`). */
  rotated_from: bigint | null
}

export type ApiKeyRow = Selectable<ApiKeyTable>
