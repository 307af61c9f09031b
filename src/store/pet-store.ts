import type { Pet, PetStatus } from '../pets/pet.schemas.js'

/** What a create stores; the store adds the id. */
export interface PetValues {
  name: string
  categoryId: bigint
  status: PetStatus
}

export interface PetFilter {
  status: PetStatus | undefined
  categoryId?: bigint | undefined
  /** Keyset position: only pets with a greater id. */
  afterId?: bigint | undefined
  limit: number
}

/** A page of pets as JSON text, and where it ends. */
export interface PetPage {
  /** The JSON array of the page's pets, in ascending id order. */
  json: string
  /** The id of the last pet on the page, when it is full and more pets follow. */
  nextAfterId: bigint | undefined
}

/** The answer a create with an `Idempotency-Key` gave, kept so that a retry gets the same. */
export interface StoredResponse {
  /** SHA-256 of the request body in canonical form: a retry must send the same body. */
  requestHash: string
  status: number
  /** The body as first sent, JSON text. */
  body: string
  location: string | null
}

/** Makes a create happen at most once per (API key, Idempotency-Key) within the retention time. */
export interface IdempotencyClaim {
  apiKeyId: bigint
  key: string
  requestHash: string
  /** The created pet's URL is this followed by its id. */
  locationPrefix: string
  /** Records made before this moment (ISO 8601) have expired and no longer count. */
  notBefore: string
}

export interface PetCreate {
  pet: PetValues
  idempotency?: IdempotencyClaim | undefined
}

export type PetCreated =
  /** `response` is the answer stored with the claim, when there was one. */
  | { outcome: 'created', pet: Pet, response?: StoredResponse | undefined } |
  /** The claim's key was used before: nothing was created, and this is what was answered then. */
  { outcome: 'replayed', response: StoredResponse }

/**
 * The pets of a store: the hot reads as JSON text, creates committed together, and bulk inserts.
 * One implementation per dialect (see `sqlite/` and `postgres/`); routes, the CLI and the import see
 * only this.
 */
export interface PetStore {
  /** Pets in ascending id order after a keyset position; the (status, id) and (category_id, id) indexes keep this flat as the store grows. */
  findPage: (filter: PetFilter) => Promise<PetPage>
  /** One pet as JSON text, or undefined when there is none with this id. */
  findById: (id: bigint) => Promise<string | undefined>
  /**
   * Creates a pet, with its idempotency record when claimed, and resolves once that is committed.
   * Creates that arrive together share one transaction (group commit), so a 201 still means
   * "committed" while one commit serves many requests.
   */
  create: (request: PetCreate) => Promise<PetCreated>
  /** Stores pets in one transaction and returns them with their ids, in the order given (bulk loads). */
  insertMany: (pets: readonly PetValues[]) => Promise<Pet[]>
  /** After a bulk load, lets the planner see the table's new size (see the PostgreSQL store). */
  refreshStatistics: () => Promise<void>
}
