import { createHmac, timingSafeEqual } from 'node:crypto'
import { PET_STATUSES, type PetStatus } from './pet.schemas.js'

const VERSION = 1
const PAYLOAD_BYTES = 10 // version, status, 8-byte id
const MAC_BYTES = 12

/**
 * Keyset pagination cursors: the last id of a page and the status filter it was made for, signed
 * with the store's secret so that a forged or altered cursor is refused rather than trusted.
 */
export interface PetCursorCodec {
  encode (afterId: bigint, status: PetStatus | undefined): string
  /** The id to continue after, or undefined when the cursor is malformed, forged or for another filter. */
  decode (cursor: string, status: PetStatus | undefined): bigint | undefined
}

export function createPetCursorCodec (secret: string): PetCursorCodec {
  const sign = (payload: Buffer): Buffer => createHmac('sha256', secret).update(payload).digest().subarray(0, MAC_BYTES)

  return {
    encode (afterId, status) {
      const payload = Buffer.alloc(PAYLOAD_BYTES)
      payload.writeUInt8(VERSION, 0)
      payload.writeUInt8(statusCode(status), 1)
      payload.writeBigInt64BE(afterId, 2)
      return Buffer.concat([payload, sign(payload)]).toString('base64url')
    },

    decode (cursor, status) {
      const bytes = Buffer.from(cursor, 'base64url')
      // Buffer.from skips characters outside base64url: re-encoding catches them.
      if (bytes.length !== PAYLOAD_BYTES + MAC_BYTES || bytes.toString('base64url') !== cursor) return undefined
      const payload = bytes.subarray(0, PAYLOAD_BYTES)
      if (!timingSafeEqual(bytes.subarray(PAYLOAD_BYTES), sign(payload))) return undefined
      if (payload.readUInt8(0) !== VERSION || payload.readUInt8(1) !== statusCode(status)) return undefined
      return payload.readBigInt64BE(2)
    }
  }
}

function statusCode (status: PetStatus | undefined): number {
  return status === undefined ? 0 : PET_STATUSES.indexOf(status) + 1
}
