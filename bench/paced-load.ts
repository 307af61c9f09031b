// Requests at a steady rate, spread over each second: autocannon's `overallRate` sends each
// connection's share of a second at once at the top of the second and then waits, so a load of
// "1,000 a second" came as a burst of 1,000 every second, and the webhook latency measured under it
// was mostly the time to drain each burst (a saw-tooth from 20 ms to 500 ms and back every second).
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

export interface PacedLoad {
  url: string
  method: string
  headers: Record<string, string>
  body: string
  perSecond: number
  seconds: number
}

export interface PacedResult {
  ok: number
  failed: number
}

// How often requests are sent: each tick sends those due since the last, so they leave at most this far apart in bursts.
const TICK_MS = 2

/** Sends `perSecond` requests a second for `seconds`, each as soon as it is due; resolves once every answer is in. */
export async function pacedLoad ({ url, method, headers, body, perSecond, seconds }: PacedLoad): Promise<PacedResult> {
  const agent = new Agent({ keepAlive: true })
  const result: PacedResult = { ok: 0, failed: 0 }
  const answers: Array<Promise<void>> = []
  const send = () => new Promise<void>((resolve) => {
    const sent = request(url, { method, headers, agent }, (response) => {
      response.resume()
      response.on('end', () => {
        if (response.statusCode !== undefined && response.statusCode >= 200 && response.statusCode < 300) result.ok++
        else result.failed++
        resolve()
      })
    })
    sent.on('error', () => { result.failed++; resolve() })
    sent.end(body)
  })
  const total = perSecond * seconds
  const started = performance.now()
  while (answers.length < total) {
    const due = Math.min(total, Math.floor((performance.now() - started) * perSecond / 1000))
    while (answers.length < due) answers.push(send())
    await sleep(TICK_MS)
  }
  await Promise.all(answers)
  agent.destroy()
  return result
}
