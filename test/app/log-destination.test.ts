import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { tempDir } from '../helper.js'

/**
 * Runs a process that writes two lines to a log on `path` and exits at once, the first line's
 * write still in flight: the second is left for the log's flush at exit. Resolves with its exit code
 * (or with what it did instead) and its stderr.
 */
async function exitWithLinesHeld (t: TestContext, path: string): Promise<{ code: number | string | null, stderr: string }> {
  const script = `
    import { openSync } from 'node:fs'
    import { logDestination } from './src/log-destination.ts'
    const log = logDestination(openSync(${JSON.stringify(path)}, 'a'))
    log.write('the first line\\n')
    log.write('the second line\\n')
    process.exit(0)`
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { stdio: ['ignore', 'ignore', 'pipe'] })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const [code] = await Promise.race([once(child, 'exit'), sleep(10_000).then(() => ['still running 10 s after its exit'])])
  return { code: code as number | string | null, stderr }
}

test('the lines a log holds at exit are written', async (t) => {
  const path = join(tempDir(t), 'service.log')
  const { code, stderr } = await exitWithLinesHeld(t, path)
  assert.equal(code, 0, stderr)
  // The second line is the one held. The first one's write, in flight on Node's thread pool as the
  // process exits, may end after the exit's own, or not at all: the process does not wait for it.
  assert.match(readFileSync(path, 'utf8'), /^the second line$/m)
})

test('a log that fails long enough to drop lines is written again once it can be: it stopped for good once it held its most', async (t) => {
  const path = join(tempDir(t), 'service.log')
  // Past the file-size limit (2 MiB in dash's blocks of 512 bytes, 4 in bash's: room for the 1 MiB the
  // log holds) a write fails with EFBIG, the signal it would raise ignored, as one fails with ENOSPC on
  // a full disk; emptying the file makes room.
  const script = `
    import { openSync, truncateSync } from 'node:fs'
    import { setImmediate as turn } from 'node:timers/promises'
    import { logDestination } from './src/log-destination.ts'
    const log = logDestination(openSync(${JSON.stringify(path)}, 'a'))
    const line = 'x'.repeat(1023) + '\\n'
    for (let i = 0; i < 6144; i++) { log.write(line); await turn() }
    truncateSync(${JSON.stringify(path)}, 0)
    // A line tries again what the log holds, unless a write is under way: the next one then does.
    for (let i = 1; i <= 3; i++) {
      log.write('after the room was made ' + i + '\\n')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    process.exit(0)`
  const child = spawn('sh', ['-c', 'trap "" XFSZ; ulimit -f 4096; exec "$@"', 'sh', process.execPath, '--import', 'tsx', '--input-type=module', '--eval', script], { stdio: ['ignore', 'ignore', 'pipe'] })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const [code] = await once(child, 'exit')
  assert.equal(code, 0, stderr)
  assert.match(stderr, /^petstore: the log cannot be written \(EFBIG\)/m)
  assert.match(stderr, /^petstore: the log is written again; \d+ lines were dropped meanwhile$/m)
  assert.ok(readFileSync(path, 'utf8').endsWith('\nafter the room was made 3\n'), 'the last line is in the log')
})

test('a log that cannot be written as the process exits (its terminal gone, its disk full) costs the lines it held, never the exit: the process spun for good', async (t) => {
  const { code, stderr } = await exitWithLinesHeld(t, '/dev/full')
  assert.equal(code, 0, stderr)
  assert.match(stderr, /^petstore: the log cannot be written \(ENOSPC\) as the process exits: its last lines are lost\n$/)
})
