import assert from 'node:assert/strict'
import { execFile, spawn, type ChildProcessByStdio } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, constants, openSync, readFileSync, readSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { test, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { tempDir } from '../helper.js'

/**
 * Runs `script`, an ES module that imports the service's sources, in a Node process of its own (after
 * `shellSetup`, commands of sh such as a ulimit, if given), killed if still running when the test ends.
 */
function startScript (t: TestContext, script: string, shellSetup?: string): { child: ChildProcessByStdio<null, null, Readable>, stderr: () => string } {
  const node = [process.execPath, '--import', 'tsx', '--input-type=module', '--eval', script]
  const [command, ...args] = shellSetup === undefined ? node : ['sh', '-c', `${shellSetup}; exec "$@"`, 'sh', ...node]
  const child = spawn(command!, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  return { child, stderr: () => stderr }
}

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
  const { child, stderr } = startScript(t, script)
  const [code] = await Promise.race([once(child, 'exit'), sleep(10_000).then(() => ['still running 10 s after its exit'])])
  return { code: code as number | string | null, stderr: stderr() }
}

test('the lines a log holds at exit are written', async (t) => {
  const path = join(tempDir(t), 'service.log')
  const { code, stderr } = await exitWithLinesHeld(t, path)
  assert.equal(code, 0, stderr)
  // The second line is the one held. The first one's write, in flight on Node's thread pool as the
  // process exits, may end after the exit's own.
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
    let failed = false
    log.once('error', () => { failed = true })
    while (!failed) { log.write(line); await turn() }
    for (let i = 0; i < 2048; i++) { log.write(line); await turn() } // past the 1 MiB held: dropped
    truncateSync(${JSON.stringify(path)}, 0)
    // A line tries again what the log holds, unless a write is under way: the next one then does.
    for (let i = 1; i <= 3; i++) {
      log.write('after the room was made ' + i + '\\n')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    process.exit(0)`
  const { child, stderr } = startScript(t, script, 'trap "" XFSZ; ulimit -f 4096')
  const [code] = await once(child, 'exit')
  assert.equal(code, 0, stderr())
  assert.match(stderr(), /^petstore: the log cannot be written \(EFBIG\)/m)
  assert.match(stderr(), /^petstore: the log is written again; \d+ lines were dropped meanwhile$/m)
  // (Not last for sure: a write in flight on Node's thread pool as the process exits may end after the exit's own.)
  assert.ok(readFileSync(path, 'utf8').includes('\nafter the room was made 3\n'), 'the last line is in the log')
})

test('a log that cannot be written as the process exits (its terminal gone, its disk full) costs the lines it held, never the exit: the process spun for good', async (t) => {
  const { code, stderr } = await exitWithLinesHeld(t, '/dev/full')
  assert.equal(code, 0, stderr)
  assert.match(stderr, /^petstore: the log cannot be written \(ENOSPC\) as the process exits: its last lines are lost\n$/)
})

test('the log writes whole lines to a pipe another process writes to as well (the workers of WEB_CONCURRENCY share stdout): a write cut by a full pipe let another\'s line into one', async (t) => {
  const fifo = join(tempDir(t), 'log')
  await promisify(execFile)('mkfifo', [fifo])
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
  const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)
  t.after(() => { closeSync(reader); closeSync(writer) })
  const page = Buffer.alloc(4096, '.')
  for (;;) { try { writeSync(writer, page) } catch { break } } // the pipe is full
  const read = (size: number) => { const buffer = Buffer.alloc(size); return buffer.subarray(0, readSync(reader, buffer)).toString() }
  let received = read(4096) // room for one page
  // A process whose log writes ten lines of 1,000 bytes at once, and says so once a write is done.
  const script = `
    import { constants, openSync } from 'node:fs'
    import { logDestination } from './src/log-destination.ts'
    const log = logDestination(openSync(${JSON.stringify(fifo)}, constants.O_WRONLY | constants.O_NONBLOCK))
    log.once('write', () => { process.stderr.write('written\\n') })
    for (let i = 0; i < 10; i++) log.write('{"line":' + i + ',"text":"' + 'x'.repeat(980) + '"}\\n')`
  const { child } = startScript(t, script)
  await once(child.stderr, 'data')
  // Another writer's line, once there is room: sonic-boom tries again a tenth of a second later.
  received += read(4096)
  writeSync(writer, '{"line":"another process\'s"}\n')
  const deadline = Date.now() + 5000
  while ((received.match(/"line":/g) ?? []).length < 11 && Date.now() < deadline) {
    try { received += read(65536) } catch { await sleep(20) }
  }
  const lines = received.replace(/^\.+/, '').split('\n').filter(Boolean)
  const broken = lines.filter((line) => { try { JSON.parse(line); return false } catch { return true } })
  assert.deepEqual([lines.length, broken.length], [11, 0], `${lines.length} lines, broken:\n${broken.map((line) => line.slice(0, 80)).join('\n')}`)
})
