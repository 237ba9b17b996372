/**
 * `npm run smoke:model`: one small supervised task against the configured OpenAI-compatible endpoint,
 * with the model in every role (main and reviewer). Ends with exactly one of
 *   PASS                        the task completed and hello.txt exists in its workspace
 *   FAIL: <why>                 anything else (exit 1)
 *   SKIPPED (no OPENAI_API_KEY) nothing was run (exit 0; a skipped run never says PASS)
 * Environment: OPENAI_API_KEY, OPENAI_BASE_URL (default OpenAI), TASKWARD_MODEL (default gpt-4o-mini),
 * TASKWARD_SMOKE_TIMEOUT_MS (default 300000), TASKWARD_SMOKE_MAX_TOKENS (default 200000: the task's budget).
 * The key is never printed.
 */
import { readdir } from 'node:fs/promises'
import * as OpenAIPlugin from '@taskward/plugin-openai'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

const OBJECTIVE = 'Create a file named hello.txt in the workspace containing the single word hello. '
  + 'Plan it as one node with id "hello"; write the file with the write tool; report the node citing the seq of the write result.'

const env = process.env
const key = env.OPENAI_API_KEY?.trim()
const say = (line: string) => console.log(key ? OpenAIPlugin.redact(line, key) : line)

async function main(): Promise<'PASS' | string> {
  const timeoutMs = Number(env.TASKWARD_SMOKE_TIMEOUT_MS || 300_000)
  const cwd = await tempWorkspace({ 'README.md': '# smoke\n' }, 'taskward-smoke-')
  const host = await TestHost.boot({
    plugins: [
      [SupervisorPlugin, { reviewerModel: 'openai', defaultModel: 'openai', automaticContinuation: true, reviewDeadlineMs: timeoutMs }],
      [WorkspacePlugin, {}],
      [OpenAIPlugin, {
        routes: [{
          route: 'endpoint',
          baseURL: env.OPENAI_BASE_URL || 'https://api.openai.com/v1',
          model: env.TASKWARD_MODEL || 'gpt-4o-mini',
          timeoutMs: Math.min(timeoutMs, 120_000),
        }],
        maxTokensPerTask: Number(env.TASKWARD_SMOKE_MAX_TOKENS || 200_000),
      }],
    ],
    waitFor: ['supervisor'],
  })
  try {
    const started = Date.now()
    while (!host.ctx.models.routes().includes('openai')) {
      if (Date.now() - started > 5000) return 'FAIL: the openai route did not register'
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    say(`endpoint ${env.OPENAI_BASE_URL || 'https://api.openai.com/v1'}, model ${env.TASKWARD_MODEL || 'gpt-4o-mini'}`)
    const { session } = await host.ctx.supervisor.startSession({ cwd })
    const phase = async () => (await host.ctx.supervisor.state(session)).current?.phase
    let lastPhase: string | undefined
    /** Wait for `wanted`; any model error, refusal or pause on the way is the answer. */
    const reach = async (wanted: string): Promise<string | undefined> => {
      while (true) {
        const now = await phase()
        if (now !== lastPhase) say(`task phase: ${lastPhase = now}`)
        if (now === wanted) return
        const events = await session.read({ from: 0, limit: 100_000 })
        const trouble = events.find((e) => ['agent/error', 'agent/refused', 'review/fault'].includes(e.type))
        if (trouble) return `${trouble.type} ${trouble.data.code}: ${trouble.data.message}`
        if (now === 'paused') return `the task paused (${(await host.ctx.supervisor.state(session)).current?.pauseReason})`
        if (Date.now() - started > timeoutMs) return `no ${wanted} after ${timeoutMs} ms (phase ${now})`
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
    const created = await host.ctx.commands.input(session, `/task new ${OBJECTIVE}`)
    if (created?.error) return `FAIL: /task new: ${created.error.code} ${created.error.message}`
    const planned = await reach('awaiting-approval')
    if (planned) return `FAIL: ${planned}`
    const approved = await host.ctx.commands.input(session, '/task approve')
    if (approved?.error) return `FAIL: /task approve: ${approved.error.code} ${approved.error.message}`
    const completed = await reach('complete')
    if (completed) return `FAIL: ${completed}`
    const events = await session.read({ from: 0, limit: 100_000 })
    const tokens = events.filter((e) => e.type === 'model/usage').reduce((sum, e) => sum + e.data.promptTokens + e.data.completionTokens, 0)
    say(`tokens used by the main agent: ${tokens}; ${((Date.now() - started) / 1000).toFixed(1)} s`)
    if (!(await readdir(cwd)).includes('hello.txt')) return 'FAIL: the task completed but hello.txt was not written'
    return 'PASS'
  } finally {
    await host.dispose()
    await removeTree(cwd)
  }
}

if (!key) {
  console.log('SKIPPED (no OPENAI_API_KEY)')
  process.exit(0)
}
main().then((outcome) => {
  say(outcome)
  process.exit(outcome === 'PASS' ? 0 : 1)
}, (error) => {
  say(`FAIL: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
})
