/** The `idempotency_keys` table: the stored outcome of a create, per API key and client-chosen key. */
export interface IdempotencyKeyTable {
  api_key_id: bigint
  key: string
  /** SHA-256 of the request body in canonical form: a retry must send the same body. */
  request_hash: string
  status_code: number
  /** The response body exactly as first sent. */
  response_body: string
  location: string | null
  created_at: string
}
