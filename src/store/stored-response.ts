import { stringify as stringifyExact } from 'lossless-json'
import type { Pet } from '../pets/pet.schemas.js'
import type { IdempotencyClaim, StoredResponse } from './pet-store.js'

/** The answer kept with a claim for the pet it created: the body is stored as text and replayed byte for byte. */
export function createdResponse (claim: IdempotencyClaim, pet: Pet): StoredResponse {
  return { requestHash: claim.requestHash, status: 201, body: stringifyExact(pet)!, location: `${claim.locationPrefix}${pet.id}` }
}

/** Columns of `idempotency_keys` under the names of StoredResponse. */
export const STORED_RESPONSE_SELECT_LIST = 'request_hash as "requestHash", status_code as status, response_body as body, location'
