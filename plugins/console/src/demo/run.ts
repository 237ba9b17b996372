import type { Context } from 'cordis'
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import type { SupervisorState } from '@taskward/protocol'
import { MAIN_STEPS, REVIEW_STEPS, mainStep, reviewerStep } from './agent'
import { DEMO_MARKER, DEMO_OBJECTIVE, DEMO_README, DEMO_USER_REPORT, demoChecks } from './story'

/*
 * The `npm start` demo: on an empty database, a demo workspace and a main session in which the
 * built-in scripted model runs the demo story to completion and then proposes a repair, so that the
 * console opens on a task waiting for the user's decision. It never runs when sessions exist.
 */

export type DemoOutcome =
  | { status: 'skipped', reason: string }
  | { status: 'ready', sessionId: string, taskId: string, proposalId: string, directory: string }
  | { status: 'failed', sessionId?: string, message: string }

const PHASE_TIMEOUT_MS = 60_000

async function until(ctx: Context, session: Session, what: string, check: (state: SupervisorState) => boolean) {
  const started = Date.now()
  while (true) {
    const state = await ctx.supervisor.state(session)
    if (check(state)) return state
    if (state.poisoned) throw new Error(`the supervisor projection is poisoned: ${state.poisoned.message}`)
    // The story never pauses: a paused task (e.g. VALIDATION_MISSING) ends the demo now, saying why.
    if (state.current?.phase === 'paused') {
      throw new Error(`the demo task paused while waiting for ${what}: ${JSON.stringify(state.current.pauseReason)}`)
    }
    if (Date.now() - started > PHASE_TIMEOUT_MS) throw new Error(`timed out waiting for ${what} (phase ${state.current?.phase ?? 'none'})`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** An empty directory for the demo; a directory left by an earlier demo (it has the marker) is replaced. */
async function prepareDirectory(directory: string): Promise<string | undefined> {
  const entries = await readdir(directory).catch(() => undefined)
  if (entries?.length) {
    if (!entries.includes(DEMO_MARKER)) return `${directory} exists and was not created by the demo; leaving it alone`
    await rm(directory, { recursive: true, force: true })
  } else if (entries === undefined && await stat(directory).catch(() => undefined)) {
    return `${directory} exists and is not a directory`
  }
  await mkdir(directory, { recursive: true })
  await writeFile(join(directory, DEMO_MARKER), 'Created by the Taskward console demo.\n')
  await writeFile(join(directory, 'README.md'), DEMO_README)
}

/**
 * Wait until every plugin of the host's configuration is up (`connection.readiness`): the story
 * depends on which plugins run (with recovery the task needs a check to complete), and under load a
 * later row of cordis.yml can still be loading when the console is ready. Refuses when one failed.
 */
async function configuredPluginsUp(ctx: Context) {
  const started = Date.now()
  while (true) {
    const report = ctx.connection.readiness()
    const failed = report.failed.map((p) => p.id)
    if (failed.length) throw new Error(`plugin${failed.length > 1 ? 's' : ''} ${failed.join(', ')} failed to start`)
    // The server listening is not the demo's business; only the plugins are.
    if (report.pending.every((p) => p.id === 'server')) return
    if (Date.now() - started > PHASE_TIMEOUT_MS) {
      throw new Error(`timed out waiting for the plugins ${report.pending.map((p) => p.id).join(', ')} to start`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export async function runDemo(ctx: Context, directory: string): Promise<DemoOutcome> {
  try {
    await configuredPluginsUp(ctx)
  } catch (error) {
    return { status: 'failed', message: `the demo did not start: ${error instanceof Error ? error.message : String(error)}` }
  }
  if ((await ctx.sessions.list()).length) return { status: 'skipped', reason: 'the database already holds sessions' }
  const refusal = await prepareDirectory(directory)
  if (refusal) return { status: 'skipped', reason: refusal }
  const scripted = ctx.models.scripted
  scripted.script('reviewer', Array.from({ length: REVIEW_STEPS }, () => reviewerStep(ctx)))
  scripted.script('main', Array.from({ length: MAIN_STEPS }, () => mainStep(ctx)))
  let session: Session | undefined
  try {
    const started = await ctx.supervisor.startSession({ cwd: directory })
    session = started.session
    await ctx.commands.input(session, `/task new ${DEMO_OBJECTIVE}`)
    if (ctx.get('recovery')) {
      // With the recovery controller loaded, completion needs a passing check: give the task one.
      await ctx.commands.input(session, `/task checks ${JSON.stringify(demoChecks(process.execPath))}`)
    }
    await until(ctx, session, 'plan approval to be requested', (s) => s.current?.phase === 'awaiting-approval')
    await ctx.commands.input(session, '/task approve')
    const done = await until(ctx, session, 'the task to complete', (s) => s.current?.phase === 'complete')
    const task = done.current!
    await started.agent.whenIdle()
    started.agent.followup(DEMO_USER_REPORT, { origin: 'user' })
    await started.agent.whenIdle()
    const state = await ctx.supervisor.state(session)
    const proposal = state.proposals.findLast((p) => p.proposal.taskId === task.id && p.status === 'pending')
    if (!proposal) {
      const current = state.current
      throw new Error(`the demo task ended without its pending repair proposal (task ${current?.id ?? 'none'} is ${current?.phase ?? 'gone'}`
        + `${current?.pauseReason ? `, paused: ${JSON.stringify(current.pauseReason)}` : ''}); is the repair plugin loaded?`)
    }
    return { status: 'ready', sessionId: session.id, taskId: task.id, proposalId: proposal.proposal.id, directory }
  } catch (error) {
    return { status: 'failed', ...(session ? { sessionId: session.id } : {}), message: error instanceof Error ? error.message : String(error) }
  }
}
