/* Shared helpers of the plugin-openai suites (no tests here). */
import type { Agent, TurnSummary } from '@taskward/host'
import type { TestHost } from '@taskward/testkit'

export const KEY = 'sk-test-0123456789-DO-NOT-LEAK'

/** Run one turn of `agent` and return its summary and the events it wrote. */
export async function runTurn(host: TestHost, agent: Agent, text: string) {
  const from = agent.session.seq
  const deltas: string[] = []
  let summary: TurnSummary | undefined
  const offDelta = host.ctx.on('agent/text-delta', (who, delta) => { if (who === agent) deltas.push(delta) })
  const offEnd = host.ctx.on('agent/turn-end', (who, s) => { if (who === agent) summary = s })
  agent.followup(text)
  await new Promise((resolve) => setTimeout(resolve, 0))
  await agent.whenIdle()
  while (!summary) await new Promise((resolve) => setTimeout(resolve, 5))
  offDelta()
  offEnd()
  const events = await agent.session.read({ from, limit: 10_000 })
  return { summary, deltas, events }
}

export async function until(check: () => boolean | Promise<boolean>, what = 'condition', timeout = 10_000) {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
