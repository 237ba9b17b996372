/**
 * The goals a benchmark holds its figures to. Each is printed with its verdict at the end, and a missed
 * one makes the benchmark exit 1 (so `npm run bench` reports it), instead of a ratio nobody checks.
 */
export class Goals {
  private results: { label: string, ok: boolean, detail: string }[] = []

  /** Record one goal: `ok` whether it held, `detail` the figure against the goal (e.g. "0.84x, goal >= 0.8x"). */
  check(label: string, ok: boolean, detail: string) {
    this.results.push({ label, ok, detail })
    return ok
  }

  /** Print every verdict; a missed goal sets the exit code to 1. */
  report() {
    console.log('goals:')
    for (const { label, ok, detail } of this.results) console.log(`  ${ok ? 'met   ' : 'MISSED'} ${label}: ${detail}`)
    if (this.results.some((result) => !result.ok)) process.exitCode = 1
  }
}
