import { isoNow, type Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { lockIdOrder } from '../db/id-order-lock.js'
import { recordEvents } from '../events/event-log.js'
import type { ClaimedCreate } from '../idempotency/idempotent-create.js'
import type { IdempotencyClaim, StoredResponse } from '../store/pet-store.js'
import { createdResponse, findClaimedResponse, saveResponse } from '../store/stored-response.js'
import { categoryNameKey } from './category-name-key.js'
import type { Category } from './category.schemas.js'

const CATEGORY_COLUMNS = ['id', 'name'] as const

// Names the lock that orders category ids (see lockIdOrder).
const CATEGORY_INSERT_LOCK = 7_340_003

export type CategoryCreated =
  | ClaimedCreate & { outcome: 'created', category: Category } |
  ClaimedCreate & { outcome: 'replayed' } |
  /** A category of the same name (compared as categoryNameKey) exists: nothing was created. */
  { outcome: 'exists', existing: Category }

/**
 * Creates a category with its `category.created` event, and records the answer under the idempotency
 * claim when there is one, in one transaction; a claim whose key holds an answer already gets that answer and creates nothing.
 */
export async function createCategory (db: Db, clock: Clock, name: string, claim?: IdempotencyClaim): Promise<CategoryCreated> {
  const createdAt = isoNow(clock)
  return await db.transaction().execute(async (trx): Promise<CategoryCreated> => {
    if (claim !== undefined) {
      const stored = await findClaimedResponse(trx, claim)
      if (stored !== undefined) return { outcome: 'replayed', response: stored }
    }
    await lockIdOrder(trx, CATEGORY_INSERT_LOCK)
    const nameKey = categoryNameKey(name)
    const category = await trx.insertInto('categories')
      .values({ name, name_key: nameKey, created_at: createdAt })
      .onConflict((conflict) => conflict.column('name_key').doNothing())
      .returning(CATEGORY_COLUMNS)
      .executeTakeFirst()
    if (category === undefined) {
      const existing = await trx.selectFrom('categories').select(CATEGORY_COLUMNS).where('name_key', '=', nameKey).executeTakeFirstOrThrow()
      return { outcome: 'exists', existing }
    }
    let response: StoredResponse | undefined
    if (claim !== undefined) {
      response = createdResponse(claim, category)
      await saveResponse(trx, claim, response, createdAt)
    }
    // Last, as every transaction that records events (see recordEvents).
    await recordEvents(trx, createdAt, [{ type: 'category.created', data: category }])
    return { outcome: 'created', category, response }
  })
}

export async function findCategoryById (db: Db, id: bigint): Promise<Category | undefined> {
  return await db.selectFrom('categories').select(CATEGORY_COLUMNS).where('id', '=', id).executeTakeFirst()
}

export interface CategoryPage {
  categories: Category[]
  /** The id of the last category on the page, when more follow. */
  nextAfterId: bigint | undefined
}

export async function findCategoryPage (db: Db, { afterId = 0n, limit }: { afterId: bigint | undefined, limit: number }): Promise<CategoryPage> {
  const categories = await db.selectFrom('categories').select(CATEGORY_COLUMNS).where('id', '>', afterId).orderBy('id').limit(limit + 1).execute()
  if (categories.length <= limit) return { categories, nextAfterId: undefined }
  categories.length = limit
  return { categories, nextAfterId: categories[limit - 1]!.id }
}
