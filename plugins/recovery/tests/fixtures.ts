/*
 * Shared helpers of the recovery suites (no tests here): a real host with the workspace, supervisor
 * and recovery plugins, a main session with its scripted agent, and a task driven to the point where
 * completion can be requested.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { expect } from 'chai'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Session, ToolResult } from '@taskward/host'
import { RECORD_EVENT_TYPE, RECOVERY_NAMESPACE, type SessionEvent, type Task } from '@taskward/protocol'
import { removeTree, TestHost, tempWorkspace } from '@taskward/testkit'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import { findOnPath, RecoveryPlugin, type Config } from '../src'
import { MEMORY_DIRECTORY } from '../src/memory-copies'

export type RecoveryConfig = Partial<Omit<Config, 'budgets'>> & { budgets?: Partial<Config['budgets']> }

/** A suite's `before`: bubblewrap is there, or the suite is skipped — never in CI, which installs it. */
export async function requireBwrap(this: Mocha.Context) {
  if (await findOnPath('bwrap')) return
  if (process.env.CI) throw new Error('bubblewrap (bwrap) must be installed in CI: .ci/run installs it')
  this.skip()
}

export function plugins(config: RecoveryConfig = {}): [any, any][] {
  return [[WorkspacePlugin, {}], [SupervisorPlugin, { automaticContinuation: false }], [RecoveryPlugin, config]]
}

export async function bootRecovery(config: RecoveryConfig = {}, dataDir?: string) {
  return TestHost.boot({ plugins: plugins(config), waitFor: ['workspace', 'supervisor', 'recovery'], ...dataDir ? { dataDir } : {} })
}

/** A check that passes only when answer.txt says "right"; its failure names the wrong answer. */
export const ANSWER_CHECK = {
  id: 'answer',
  argv: ['sh', '-c', 'test "$(cat answer.txt)" = right || { echo "wrong answer: $(cat answer.txt)"; exit 1; }'],
  timeoutMs: 10_000,
}

export const answerWorkspace = (answer = 'alpha') => tempWorkspace({ 'answer.txt': answer, 'README.md': '# answers\n' })

export async function setAnswer(cwd: string, answer: string) {
  await writeFile(join(cwd, 'answer.txt'), answer)
}

/** Whether `pid` is a live process (a zombie nobody reaped counts as gone). */
export async function alive(pid: number) {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

export async function until(check: () => Promise<boolean> | boolean, what = 'condition', timeout = 10_000) {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

export function scriptReview(host: TestHost, verdict: 'pass' | 'revise' | 'needs-user', findings: string[] = []) {
  host.scripted.script('reviewer', [{ toolCalls: [{ name: 'review_verdict', args: { verdict, findings, evidenceSeqs: [] } }] }])
}

export async function reviewsSettled(host: TestHost, session: Session) {
  await until(async () => (await host.ctx.supervisor.state(session)).reviews.every((job) => job.status !== 'requested'), 'reviews to settle')
  await until(() => host.ctx.agents.list().every((agent) => agent.session.role !== 'reviewer' || (agent.state === 'idle' && !agent.queued)), 'reviewers idle')
  await host.ctx.recovery.settled()
}

export function call(host: TestHost, session: Session, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return host.ctx.tools.execute(session, name, args, { agentId: session.id })
}

export async function ok(host: TestHost, session: Session, name: string, args: Record<string, unknown> = {}) {
  const outcome = await call(host, session, name, args)
  expect(outcome.error, `${name} failed: ${outcome.error?.code} ${outcome.error?.message}`).to.equal(undefined)
  return outcome.result
}

export async function command(host: TestHost, session: Session, text: string) {
  const answer = await host.ctx.commands.input(session, text)
  expect(answer?.error, `${text} failed: ${answer?.error?.code} ${answer?.error?.message}`).to.equal(undefined)
  return answer!.reply as any
}

/** A main session with its scripted agent, and a one-node task whose node passed review. */
export async function readyTask(host: TestHost, cwd: string, checks?: object[]): Promise<{ session: Session, task: Task }> {
  const { session } = await host.ctx.supervisor.startSession({ cwd })
  await command(host, session, '/task new get the answer right')
  scriptReview(host, 'pass')
  await ok(host, session, 'task_submit_plan', { acceptanceCriteria: ['answer is right'], nodes: [{ id: 'a', title: 'answer' }] })
  await reviewsSettled(host, session)
  await command(host, session, '/task approve')
  await ok(host, session, 'task_start_node', { nodeId: 'a' })
  scriptReview(host, 'pass')
  await ok(host, session, 'task_report_stage', { nodeId: 'a' })
  await reviewsSettled(host, session)
  if (checks) await command(host, session, `/task checks ${JSON.stringify(checks)}`)
  const task = (await host.ctx.supervisor.state(session)).current!
  expect(task.nodeRuns.a.status).to.equal('passed')
  return { session, task }
}

/**
 * A two-node task on a host with the answer check and maxAttempts 2: its two stage reports are two
 * progress attempts, the second a budget STOP, and the task pauses (waited for).
 */
export async function budgetStoppedTask(host: TestHost, cwd: string): Promise<Session> {
  const { session } = await host.ctx.supervisor.startSession({ cwd })
  await command(host, session, '/task new get the answer right')
  scriptReview(host, 'pass')
  await ok(host, session, 'task_submit_plan', { acceptanceCriteria: ['answer is right'], nodes: [{ id: 'a', title: 'first' }, { id: 'b', title: 'second' }] })
  await reviewsSettled(host, session)
  await command(host, session, '/task approve')
  for (const nodeId of ['a', 'b']) {
    await ok(host, session, 'task_start_node', { nodeId })
    scriptReview(host, 'pass')
    await ok(host, session, 'task_report_stage', { nodeId })
    await reviewsSettled(host, session)
  }
  await until(async () => (await phase(host, session)).phase === 'paused', 'the budget stop to pause the task')
  return session
}

export async function allEvents(session: Session): Promise<SessionEvent[]> {
  const events: SessionEvent[] = []
  for await (const event of session.events()) events.push(event)
  return events
}

/** Recovery records of a session: `[kind, payload]` in log order. */
export async function recoveryRecords(session: Session, kind?: string) {
  return (await allEvents(session))
    .filter((e) => e.type === RECORD_EVENT_TYPE && e.data.namespace === RECOVERY_NAMESPACE && (!kind || e.data.kind === kind))
    .map((e) => ({ seq: e.seq, kind: e.data.kind as string, payload: e.data.payload }))
}

export async function phase(host: TestHost, session: Session) {
  return (await host.ctx.supervisor.state(session)).current!
}

/**
 * Run crash-child.ts (a real host on `dataDir`) up to `stage`, where it SIGKILLs itself; resolves with how
 * it ended.
 */
export function runCrashChild(dataDir: string, sessionId: string, stage: string): Promise<{ code: number | null, signal: string | null }> {
  const child = join(import.meta.dirname, 'crash-child.ts')
  return new Promise((resolve, reject) => {
    const host = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', child, dataDir, sessionId, stage], {
      cwd: join(import.meta.dirname, '../../..'), stdio: ['ignore', 'ignore', 'inherit'],
    })
    host.on('error', reject)
    host.on('exit', (code, signal) => resolve({ code, signal }))
  })
}

/**
 * A real process writing `file` about every millisecond for `ms` (or until killed); resolves once it
 * has begun. A blocking wait between two writes: no timer to fall behind under load.
 */
export function startWorkspaceWriter(file: string, ms: number): Promise<ChildProcess> {
  const program = `const fs = require('fs'); const f = ${JSON.stringify(file)}; const end = Date.now() + ${ms}; fs.writeFileSync(f, 'start');`
    + `process.stdout.write('go\\n', () => { const pause = new Int32Array(new SharedArrayBuffer(4)); let n = 0;`
    + ` while (Date.now() < end) { fs.writeFileSync(f, String(n++)); Atomics.wait(pause, 0, 0, 1) } })`
  const child = spawn(process.execPath, ['-e', program], { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.stdout!.once('data', () => resolve(child))
  })
}

/** The check areas there are now (their full paths): in the temp directory, and in memory (`memoryCopyBytes`). */
export async function checkAreas(): Promise<string[]> {
  const areas: string[] = []
  for (const base of [tmpdir(), MEMORY_DIRECTORY]) {
    for (const name of await readdir(base).catch(() => [] as string[])) if (name.startsWith('taskward-check-')) areas.push(join(base, name))
  }
  return areas
}

/** A test's host and workspace, gone: its deferred recovery work settled, the host disposed, the workspace removed. */
export async function closeRecovery(host: TestHost | undefined, cwd: string | undefined) {
  await host?.ctx.recovery.settled()
  await host?.dispose()
  if (cwd) await removeTree(cwd)
}
