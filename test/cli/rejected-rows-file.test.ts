import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { RejectedRowsFile, RejectedRowsFileError } from '../../src/cli/rejected-rows-file.js'
import { tempDir } from '../helper.js'

/** `file`, whose writes take `room` bytes more and then fail as on a full disk, the last one in part. */
function fillingUp (file: FileHandle, room: number): FileHandle {
  const filling = Object.create(file) as FileHandle
  filling.write = (async (buffer: Buffer, offset: number) => {
    if (room === 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
    const taken = Math.min(room, buffer.length - offset)
    room -= taken
    return await file.write(buffer, offset, taken)
  }) as FileHandle['write']
  return filling
}

test('a report that fills the disk part way through a batch\'s rows is cut back to the batches written whole, which the import\'s report names as gone through', async (t) => {
  const path = join(tempDir(t), 'rejected.csv')
  const file = await open(path, 'w')
  t.after(async () => { await file.close() })
  const report = new RejectedRowsFile(fillingUp(file, 60), path, 'csv', ['name', 'categoryId'])
  await report.start()
  await report.write([{ position: { line: 2 }, reason: 'bad', source: 'Rex,x' }])
  const whole = readFileSync(path, 'utf8')
  assert.equal(whole, 'line,error,name,categoryId\n2,bad,Rex,x\n')
  // The next batch's first row fits, and half of its second.
  await assert.rejects(report.write([{ position: { line: 4 }, reason: 'bad', source: 'Tom,y' }, { position: { line: 5 }, reason: 'bad', source: 'Kit,z' }]), RejectedRowsFileError)
  assert.equal(readFileSync(path, 'utf8'), whole)
})
