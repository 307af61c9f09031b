import { Presets, SingleBar } from 'cli-progress'

export interface Progress {
  update (done: number): void
  stop (): void
}

/** Shows how far a long task has got: a bar on a terminal, a plain line at most every `intervalMs` otherwise. */
export function createProgress (total: number, label: string, stream: NodeJS.WriteStream = process.stderr, intervalMs = 1000): Progress {
  if (stream.isTTY === true) {
    const bar = new SingleBar({
      stream,
      format: `${label} [{bar}] {percentage}% | {value}/{total} rows | ETA {eta_formatted}`,
      hideCursor: true,
      clearOnComplete: false
    }, Presets.shades_classic)
    bar.start(total, 0)
    return { update: (done) => bar.update(done), stop: () => bar.stop() }
  }
  let printedAt = -Infinity // the first update prints
  let printed = -1
  let latest = 0
  const print = () => {
    printedAt = performance.now()
    printed = latest
    stream.write(`${label}: ${latest}/${total} rows (${total === 0 ? 100 : Math.floor(latest * 100 / total)}%)\n`)
  }
  return {
    update (done) {
      latest = done
      if (performance.now() - printedAt >= intervalMs) print()
    },
    // The last line always shows where it ended.
    stop: () => { if (printed !== latest) print() }
  }
}
