import { createHmac, timingSafeEqual } from 'node:crypto'

const VERSION = 1
const PAYLOAD_BYTES = 10 // version, filter, 8-byte id
const MAC_BYTES = 12

/**
 * Keyset pagination cursors: the last id of a page and the filter it was made for, signed with the
 * store's secret and the collection's name, so that a forged or altered cursor, or one from another
 * collection, is refused rather than trusted.
 */
export interface CursorCodec<Filter extends string> {
  encode (afterId: bigint, filter: Filter | undefined): string
  /** The id to continue after, or undefined when the cursor is malformed, forged or for another filter. */
  decode (cursor: string, filter: Filter | undefined): bigint | undefined
}

/** A codec for one collection (`pets`, `orders`) whose lists can be filtered by one of `filters`. */
export function createCursorCodec<Filter extends string> (secret: string, collection: string, filters: readonly Filter[]): CursorCodec<Filter> {
  const sign = (payload: Buffer): Buffer =>
    createHmac('sha256', secret).update(`${collection}\0`).update(payload).digest().subarray(0, MAC_BYTES)
  const filterCode = (filter: Filter | undefined): number => filter === undefined ? 0 : filters.indexOf(filter) + 1

  return {
    encode (afterId, filter) {
      const payload = Buffer.alloc(PAYLOAD_BYTES)
      payload.writeUInt8(VERSION, 0)
      payload.writeUInt8(filterCode(filter), 1)
      payload.writeBigInt64BE(afterId, 2)
      return Buffer.concat([payload, sign(payload)]).toString('base64url')
    },

    decode (cursor, filter) {
      const bytes = Buffer.from(cursor, 'base64url')
      // Buffer.from skips characters outside base64url: re-encoding catches them.
      if (bytes.length !== PAYLOAD_BYTES + MAC_BYTES || bytes.toString('base64url') !== cursor) return undefined
      const payload = bytes.subarray(0, PAYLOAD_BYTES)
      if (!timingSafeEqual(bytes.subarray(PAYLOAD_BYTES), sign(payload))) return undefined
      if (payload.readUInt8(0) !== VERSION || payload.readUInt8(1) !== filterCode(filter)) return undefined
      return payload.readBigInt64BE(2)
    }
  }
}
