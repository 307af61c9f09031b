// Taken when the module loads: a test that mocks timers must not hold back every write and commit with them.
const atCheckPhase = setImmediate

let due: Array<() => void> = []
let running = false

/**
 * Runs `work` at the end of the event loop's turn (its check phase, as `setImmediate` would), in the
 * order given. What that work leads to joins the same end of turn once the promises it settled have
 * run: a group commit's answers, held by the socket writes of the turn (see write-coalescing), go out
 * in the turn they were committed in, rather than one turn later.
 */
export function atEndOfTurn (work: () => void): void {
  if (due.push(work) === 1 && !running) atCheckPhase(runDue)
}

async function runDue (): Promise<void> {
  running = true
  let failure: { error: unknown } | undefined
  while (due.length > 0) {
    const works = due
    due = []
    for (const work of works) {
      // A work that throws fails alone, as an immediate of its own would: the rest of the turn (the
      // held answers of other connections, a group commit) still runs.
      try {
        work()
      } catch (error) {
        failure ??= { error }
      }
    }
    await promisesSettled()
  }
  running = false
  // Thrown on its own, uncaught, which shuts the service down gracefully: the first error only, as a
  // second uncaught one would end the process at once.
  if (failure === undefined) return
  const { error } = failure
  process.nextTick(() => { throw error })
}

/**
 * Resolves once the microtasks queued so far, and those they queue, have run: a tick queued from a
 * microtask runs only when the microtask queue is empty.
 */
async function promisesSettled (): Promise<void> {
  await new Promise((resolve) => { queueMicrotask(() => { process.nextTick(resolve) }) })
}

/**
 * `read`, made once at the end of the turn for every caller of the turn, each of which waits for it:
 * what it reads is then younger than everything the turn received.
 */
export function oncePerTurn<T> (read: () => T): () => Promise<T> {
  let reading: Promise<T> | undefined
  return async () => await (reading ??= new Promise<T>((resolve, reject) => {
    atEndOfTurn(() => {
      reading = undefined
      try {
        resolve(read())
      } catch (error) {
        reject(error)
      }
    })
  }))
}
