import { createHmac, timingSafeEqual } from 'node:crypto'

const VERSION = 1
const PAYLOAD_BYTES = 10 // version, status filter, 8-byte id
const MAC_BYTES = 12

/** What a list was narrowed to; a cursor made for one filter is refused for another. */
export interface ListFilter<Status extends string> {
  status?: Status | undefined
  categoryId?: bigint | undefined
}

/**
 * Keyset pagination cursors: the last id of a page and the filter it was made for, signed with the
 * store's secret and the collection's name, so that a forged or altered cursor, or one from another
 * collection or filter, is refused rather than trusted.
 */
export interface CursorCodec<Status extends string> {
  encode (afterId: bigint, filter: ListFilter<Status>): string
  /** The id to continue after, or undefined when the cursor is malformed, forged or for another filter. */
  decode (cursor: string, filter: ListFilter<Status>): bigint | undefined
}

/** A codec for one collection (`pets`, `orders`) whose lists can be filtered by one of `statuses` (and by category). */
export function createCursorCodec<Status extends string> (secret: string, collection: string, statuses: readonly Status[]): CursorCodec<Status> {
  // The category is in the signature rather than the payload, so cursors made before the filter existed still hold.
  const sign = (payload: Buffer, categoryId: bigint | undefined): Buffer => {
    const mac = createHmac('sha256', secret).update(`${collection}\0`)
    if (categoryId !== undefined) mac.update(`categoryId=${categoryId}\0`)
    return mac.update(payload).digest().subarray(0, MAC_BYTES)
  }
  const statusCode = (status: Status | undefined): number => status === undefined ? 0 : statuses.indexOf(status) + 1

  return {
    encode (afterId, { status, categoryId }) {
      const payload = Buffer.alloc(PAYLOAD_BYTES)
      payload.writeUInt8(VERSION, 0)
      payload.writeUInt8(statusCode(status), 1)
      payload.writeBigInt64BE(afterId, 2)
      return Buffer.concat([payload, sign(payload, categoryId)]).toString('base64url')
    },

    decode (cursor, { status, categoryId }) {
      const bytes = Buffer.from(cursor, 'base64url')
      // Buffer.from skips characters outside base64url: re-encoding catches them.
      if (bytes.length !== PAYLOAD_BYTES + MAC_BYTES || bytes.toString('base64url') !== cursor) return undefined
      const payload = bytes.subarray(0, PAYLOAD_BYTES)
      if (!timingSafeEqual(bytes.subarray(PAYLOAD_BYTES), sign(payload, categoryId))) return undefined
      if (payload.readUInt8(0) !== VERSION || payload.readUInt8(1) !== statusCode(status)) return undefined
      return payload.readBigInt64BE(2)
    }
  }
}
