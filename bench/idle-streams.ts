// What open event streams cost an instance between events.
import { get, type ClientRequest } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { coreShare, createKey, createStore, DEFAULTS_ON, rssMbOf, startService, stop } from './service.js'

export const IDLE_STREAMS = 1000
export const IDLE_SECONDS = 10

/** What open event streams cost an instance between events: memory, and CPU (polling, heartbeats, key checks). */
export async function benchIdleStreams () {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  const store = await createStore(dir)
  const streams: ClientRequest[] = []
  try {
    const authorization = await createKey(store.databaseUrl, 'streams')
    const service = await startService(store.databaseUrl, { ...DEFAULTS_ON, MAX_STREAMS_PER_KEY: String(IDLE_STREAMS), CONNECTIONS_PER_ADDRESS: String(2 * IDLE_STREAMS) })
    const pid = service.child.pid!
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const withoutCpu = await coreShare(pid, IDLE_SECONDS)
    const withoutMb = rssMbOf(pid)
    for (let i = 0; i < IDLE_STREAMS; i++) {
      const opened = new Promise<void>((resolve, reject) => {
        const request = get(`${service.url}/v1/events/stream`, { headers: { authorization }, agent: false }, (response) => {
          if (response.statusCode !== 200) reject(new Error(`stream ${i}: ${response.statusCode}`))
          response.resume()
          resolve()
        })
        request.on('error', reject)
        streams.push(request)
      })
      await opened
    }
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const withCpu = await coreShare(pid, IDLE_SECONDS)
    const withMb = rssMbOf(pid)
    for (const request of streams) request.destroy()
    await stop(service.child)
    return { withoutMb, withMb, withoutCpu, withCpu }
  } finally {
    for (const request of streams) request.destroy()
    await store.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}
