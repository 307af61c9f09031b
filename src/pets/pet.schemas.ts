import { Type, type Static } from 'typebox'
import { PageCursor, PageLimit } from '../pagination/page-query.js'
import { Int64 } from '../validation/int64.js'
import { NAME_PATTERN } from './pet-name.js'

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export const DEFAULT_PET_STATUS = 'available'

export const PetStatus = Type.Enum(PET_STATUSES, { title: 'PetStatus', type: 'string', description: 'Availability of the animal' })
export type PetStatus = Static<typeof PetStatus>

const PetId = Int64({ minimum: 1, description: 'Unique identifier assigned by the service on creation', examples: [42] })
const CategoryId = Int64({
  minimum: 1,
  description: 'Id of the category the animal belongs to: 1 to 9223372036854775807, exact. The category need not exist: ' +
    'animals had category ids before categories could be created (beta), and clients written then keep working',
  examples: [3]
})

/**
 * A name as sent (of an animal, of a category): 1 to 100 characters (code points) once whitespace at
 * both ends is trimmed, without U+0000.
 */
export function Name (what: string, example: string) {
  return Type.String({
    format: 'pet-name',
    minLength: 1,
    pattern: NAME_PATTERN,
    description: `${what}: 1 to 100 characters (code points) once whitespace at both ends is trimmed, without U+0000; stored as sent`,
    examples: [example]
  })
}

const REX = { id: 42, name: 'Rex', categoryId: 3, status: 'available' }

export const NewPet = Type.Object({
  name: Name("The animal's name", 'Rex'),
  categoryId: CategoryId,
  status: Type.Optional({ ...PetStatus, description: 'Availability of the animal; `available` when omitted', default: DEFAULT_PET_STATUS })
}, {
  title: 'NewPet',
  additionalProperties: false,
  description: 'Request body for creating an animal',
  examples: [{ name: 'Rex', categoryId: 3 }, { name: 'Tom', categoryId: 2, status: 'pending' }]
})
export type NewPet = Static<typeof NewPet>

export const Pet = Type.Object({
  id: PetId,
  name: Type.String({ description: "The animal's name", examples: ['Rex'] }),
  categoryId: CategoryId,
  status: PetStatus
}, { title: 'Pet', additionalProperties: false, examples: [REX] })
export type Pet = Static<typeof Pet>

export const PetList = Type.Array(Pet, { examples: [[REX, { id: 43, name: 'Tom', categoryId: 2, status: 'pending' }]] })

export const ListPetsQuery = Type.Object({
  limit: PageLimit('animals'),
  status: Type.Optional({ ...PetStatus, description: 'Returns only animals with this status' }),
  // No example: /docs's Try it out would send it, and list only that category.
  categoryId: Type.Optional(Int64({ minimum: 1, description: 'Returns only animals of this category' })),
  cursor: PageCursor
}, { additionalProperties: false })
export type ListPetsQuery = Static<typeof ListPetsQuery>

export const PetIdParams = Type.Object({
  petId: Int64({ minimum: 1, description: 'Id of the animal to retrieve', examples: [42] })
})
