import type { Generated } from 'kysely'

/** The `categories` table: one row per name, compared as `name_key` (see categoryNameKey). */
export interface CategoryTable {
  id: Generated<bigint>
  /** As sent. */
  name: string
  /** Unique. */
  name_key: string
  created_at: string
}
