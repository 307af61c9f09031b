// Webhook delivery latency, from the change to the receiver, at rest and under a steady load of creates.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { pacedLoad } from './paced-load.js'
import { createKey, createStore, DEFAULTS_ON, startProcess, startService, stop } from './service.js'

const AT_REST = 100
const AT_REST_GAP_MS = 50
const LOAD_RATE = 1000
const LOAD_SECONDS = 10

interface LatencyFigures { count: number, p50: number, p99: number, max: number }

function figures (latencies: number[]): LatencyFigures {
  const sorted = [...latencies].sort((a, b) => a - b)
  const at = (share: number) => sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.at(-1)! }
}

export async function benchWebhookLatency () {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  const store = await createStore(dir)
  const receiver = await startProcess(['node', 'bench/webhook-receiver.mjs'], {}, /listening (\d+)/)
  const receiverUrl = `http://127.0.0.1:${receiver.match[1]}/hook`
  const received = async () => await (await fetch(receiverUrl)).json() as number[]
  const awaitDeliveries = async (count: number) => {
    for (let latencies = await received(); ; latencies = await received()) {
      if (latencies.length >= count) return latencies
      await sleep(5)
    }
  }
  try {
    const authorization = await createKey(store.databaseUrl, 'webhooks')
    // The one setting off the defaults: the receiver is on this machine.
    const service = await startService(store.databaseUrl, { ...DEFAULTS_ON, WEBHOOK_ALLOW_PRIVATE: 'true' })
    const headers = { authorization, 'content-type': 'application/json' }
    const subscribed = await fetch(`${service.url}/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: receiverUrl, events: ['pet.created'] }) })
    if (subscribed.status !== 201) throw new Error(`subscribing answered ${subscribed.status}`)

    for (let i = 0; i < AT_REST; i++) {
      await fetch(`${service.url}/v1/pets`, { method: 'POST', headers, body: '{"name":"Rest","categoryId":1}' })
      await sleep(AT_REST_GAP_MS)
    }
    const atRest = figures(await awaitDeliveries(AT_REST))

    const load = await pacedLoad({ url: `${service.url}/v1/pets`, method: 'POST', headers, body: '{"name":"Load","categoryId":1}', perSecond: LOAD_RATE, seconds: LOAD_SECONDS })
    const loadEnded = Date.now()
    const created = load.ok
    if (load.failed > 0) throw new Error(`creates under load: ${load.failed} failed`)
    const loaded = (await awaitDeliveries(AT_REST + created)).slice(AT_REST)
    const drainedMs = Date.now() - loadEnded
    await stop(service.child)
    // Deliveries go in the order of the changes, which came evenly spread: the second half of them is
    // of the load's second half, once the instance, started for this part, has warmed to it.
    return { atRest, underLoad: figures(loaded), secondHalf: figures(loaded.slice(loaded.length / 2)), createsPerSecond: created / LOAD_SECONDS, drainedMs }
  } finally {
    await stop(receiver.child)
    await store.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

export function describeWebhookLatency ({ atRest, underLoad, secondHalf, createsPerSecond, drainedMs }: Awaited<ReturnType<typeof benchWebhookLatency>>): string {
  const line = ({ p50, p99, max }: LatencyFigures) => `p50 ${p50} ms, p99 ${p99} ms, max ${max} ms`
  return `webhook delivery latency, change to receiver: at rest (${atRest.count} creates ${AT_REST_GAP_MS} ms apart) ${line(atRest)}; ` +
    `under ${Math.round(createsPerSecond)} creates/s for ${LOAD_SECONDS} s (${underLoad.count} deliveries) ${line(underLoad)}, in its second half ${line(secondHalf)}; all delivered ${drainedMs} ms after the load ended`
}
