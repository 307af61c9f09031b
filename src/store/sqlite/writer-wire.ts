import type { PetStatus } from '../../pets/pet.schemas.js'
import type { PetCreate, PetCreated, StoredResponse } from '../pet-store.js'
import { outcomesOf, type CreateGroup } from './sqlite-pet-writes.js'

// What crosses between the event loop and the writer thread, as flat as it can be: a structured
// clone copies an object field by field. Posted, received and read back, a group of 7 creates took
// 12 to 18 µs as objects and 10.5 µs as here, its outcomes 15 to 16 µs as objects and 5 µs as here
// (25 creates: 45 and 21 µs, 55 and 9 µs; docs/benchmarks.md). The two threads share that cost for
// every group.

/** A group of creates as sent to the writer thread: one JSON text, int64 values as decimal strings. */
export interface GroupOnWire {
  creates: string
  createdAt: string
}

type CreateOnWire =
  | [name: string, categoryId: string, status: PetStatus] |
  [name: string, categoryId: string, status: PetStatus, apiKeyId: string, key: string, requestHash: string, locationPrefix: string, notBefore: string]

/** A group for the writer thread. */
export function encodeGroup ({ creates, createdAt }: CreateGroup): GroupOnWire {
  return {
    creates: JSON.stringify(creates.map(({ pet, idempotency: claim }): CreateOnWire => claim === undefined ?
        [pet.name, String(pet.categoryId), pet.status] :
        [pet.name, String(pet.categoryId), pet.status, String(claim.apiKeyId), claim.key, claim.requestHash, claim.locationPrefix, claim.notBefore])),
    createdAt
  }
}

/** A group as the writer thread was sent it. */
export function decodeGroup ({ creates, createdAt }: GroupOnWire): CreateGroup {
  return {
    creates: (JSON.parse(creates) as CreateOnWire[]).map(([name, categoryId, status, apiKeyId, key, requestHash, locationPrefix, notBefore]): PetCreate => ({
      pet: { name, categoryId: BigInt(categoryId), status },
      ...(apiKeyId !== undefined && { idempotency: { apiKeyId: BigInt(apiKeyId), key: key!, requestHash: requestHash!, locationPrefix: locationPrefix!, notBefore: notBefore! } })
    })),
    createdAt
  }
}

/**
 * A group's outcomes as the writer thread answers them: the id of its first new pet and the answers
 * replayed, by their create's position. The rest follows from the group itself (see outcomesOf).
 */
export interface OutcomesOnWire {
  firstId: bigint
  replays: Array<[index: number, response: StoredResponse]>
}

/** A group's outcomes for the event loop. */
export function encodeOutcomes (outcomes: readonly PetCreated[]): OutcomesOnWire {
  const wire: OutcomesOnWire = { firstId: 0n, replays: [] }
  let created = false
  outcomes.forEach((outcome, index) => {
    if (outcome.outcome === 'replayed') wire.replays.push([index, outcome.response])
    else if (!created) {
      created = true
      wire.firstId = outcome.pet.id
    }
  })
  return wire
}

/** The outcomes of the creates sent, from the writer thread's answer. */
export function decodeOutcomes (creates: readonly PetCreate[], { firstId, replays }: OutcomesOnWire): PetCreated[] {
  const replayed = new Map(replays)
  return outcomesOf(creates, firstId, (index) => replayed.get(index))
}
