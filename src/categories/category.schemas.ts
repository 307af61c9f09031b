import { Type, type Static } from 'typebox'
import { PageCursor, PageLimit } from '../pagination/page-query.js'
import { Name } from '../pets/pet.schemas.js'
import { Int64 } from '../validation/int64.js'

const CategoryId = Int64({ minimum: 1, description: 'Unique identifier assigned by the service on creation', examples: [3] })

const DOGS = { id: 3, name: 'Dogs' }

export const NewCategory = Type.Object({
  name: Name("The category's name, unique without regard to case (compared after Unicode NFC and full case folding)", 'Dogs')
}, {
  title: 'NewCategory',
  additionalProperties: false,
  description: 'Request body for creating a category',
  examples: [{ name: 'Dogs' }]
})
export type NewCategory = Static<typeof NewCategory>

export const Category = Type.Object({
  id: CategoryId,
  name: Type.String({ description: "The category's name, as sent", examples: ['Dogs'] })
}, { title: 'Category', additionalProperties: false, examples: [DOGS] })
export type Category = Static<typeof Category>

export const CategoryList = Type.Array(Category, { examples: [[DOGS, { id: 4, name: 'Cats' }]] })

export const ListCategoriesQuery = Type.Object({
  limit: PageLimit('categories'),
  cursor: PageCursor
}, { additionalProperties: false })

export const CategoryIdParams = Type.Object({
  categoryId: Int64({ minimum: 1, description: 'Id of the category', examples: [3] })
})
