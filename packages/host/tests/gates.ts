/* Gates that hold a scripted step, a tool call or a maintenance window open until the test lets go (no tests here). */
import type { TestHost } from '@taskward/testkit'

/** A promise and the function that settles it. */
export function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => open = resolve)
  return { open, opened }
}

/** Registers tool `name`: a call opens `entered`, then waits for `release` and returns `result`. */
export function registerHoldingTool(host: TestHost, name: string, result: unknown) {
  const entered = gate()
  const release = gate()
  host.ctx.tools.register({
    name,
    description: 'Waits until the test releases it.',
    async execute() {
      entered.open()
      await release.opened
      return result
    },
  })
  return { entered, release }
}
