/*
 * Shared helpers of the supervisor suites (no tests here): a host with the plugin, scripted reviewer
 * verdicts, and waiting for reviews that run in their own sessions.
 */
import { expect } from 'chai'
import type { ScriptStep, Session, ToolResult } from '@taskward/host'
import type { SupervisorState, TaskPlan } from '@taskward/protocol'
import {
  TestHost, driveToApproval, driveToCompletion, removeTree, scriptReviewer, tempWorkspace, verdictStep, waitFor, type ReviewAnswer,
} from '@taskward/testkit'

export { allIdle, reviewsSettled } from '@taskward/testkit'
import { SupervisorPlugin, type Config, type Supervisor } from '../src'

/** a → b, a → c, (b, c) → d. */
export const PLAN = {
  acceptanceCriteria: ['the parser handles nested lists', 'tests pass'],
  nodes: [
    { id: 'a', title: 'tokenizer' },
    { id: 'b', title: 'list parser', dependsOn: ['a'] },
    { id: 'c', title: 'error messages', dependsOn: ['a'] },
    { id: 'd', title: 'integration tests', dependsOn: ['b', 'c'] },
  ],
} satisfies TaskPlan

export async function bootSupervisor(config: Partial<Config> = {}, extra: [any, any?][] = []) {
  const host = await TestHost.boot({ plugins: [[SupervisorPlugin, config], ...extra], waitFor: ['supervisor'] })
  return host
}

export const supervisorOf = (host: TestHost): Supervisor => host.ctx.supervisor

/** A verdict step of the scripted reviewer (testkit's `verdictStep`). */
export function verdict(value: 'pass' | 'revise' | 'needs-user', findings: string[] = [], evidenceSeqs: number[] = []) {
  return verdictStep({ verdict: value, findings, evidenceSeqs })
}

/** Queue reviewer answers: verdicts (testkit's `scriptReviewer`) or ready-made `verdict(…)` steps. */
export function scriptReviews(host: TestHost, ...verdicts: (ReviewAnswer | ReturnType<typeof verdict>)[]) {
  if (verdicts.every((v) => typeof v === 'string' || 'verdict' in v)) return scriptReviewer(host, ...verdicts as ReviewAnswer[])
  host.scripted.script('reviewer', verdicts.map((v) => typeof v === 'string' || 'verdict' in v ? verdictStep(v as ReviewAnswer) : v))
}

/** Poll `check` until it is true (testkit's `waitFor`). */
export function until(check: () => Promise<boolean> | boolean, what = 'condition', timeout = 5000) {
  return waitFor(check, { what, timeout })
}

export async function call(host: TestHost, session: Session, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return host.ctx.tools.execute(session, name, args, { agentId: session.id })
}

/** Run a tool that must succeed; returns its result. */
export async function ok(host: TestHost, session: Session, name: string, args: Record<string, unknown> = {}) {
  const outcome = await call(host, session, name, args)
  expect(outcome.error, `${name} failed: ${outcome.error?.code} ${outcome.error?.message}`).to.equal(undefined)
  return outcome.result
}

/** Run a tool that must be refused with `code`. */
export async function refused(host: TestHost, session: Session, name: string, args: Record<string, unknown>, code: string) {
  const outcome = await call(host, session, name, args)
  expect(outcome.error?.code, `${name} should be refused with ${code}`).to.equal(code)
  return outcome.error!
}

/** A `/task …` command that must succeed; returns the reply. */
export async function command(host: TestHost, session: Session, text: string) {
  const answer = await host.ctx.commands.input(session, text)
  expect(answer?.error, `${text} failed: ${answer?.error?.code} ${answer?.error?.message}`).to.equal(undefined)
  return answer!.reply as any
}

export async function commandError(host: TestHost, session: Session, text: string) {
  const answer = await host.ctx.commands.input(session, text)
  expect(answer?.error, `${text} should fail`).to.not.equal(undefined)
  return answer!.error!
}

export const workspace = () => tempWorkspace({ 'src/parser.ts': 'export const parse = () => []\n', 'README.md': '# parser\n' })

export type { SupervisorState }

/** A small plan: a → b. */
export const SMALL_PLAN = {
  acceptanceCriteria: ['greets'],
  nodes: [{ id: 'a', title: 'write greeting' }, { id: 'b', title: 'test greeting' }],
} satisfies TaskPlan

/** Drive a task from /task new to approval with passing reviews (testkit's `driveToApproval`). */
export function approvedTask(host: TestHost, session: Session, objective = 'greet the user', plan: TaskPlan = SMALL_PLAN) {
  return driveToApproval(host, session, { objective, plan })
}

/** Drive a task to `complete` with passing reviews (testkit's `driveToCompletion`). */
export function completedTask(host: TestHost, session: Session, objective = 'greet the user', plan: TaskPlan = SMALL_PLAN) {
  return driveToCompletion(host, session, { objective, plan })
}

/** One main-agent turn for the scripted model: `steps` (tool calls or functions), then an empty step ends it. */
export function turn(...steps: (ScriptStep | { name: string, args?: Record<string, unknown> }[])[]): ScriptStep[] {
  return [...steps.map((step) => Array.isArray(step) ? { toolCalls: step } : step), {}]
}

/** `user/message` texts the controller sent to a session. */
export async function controllerTurns(session: Session): Promise<string[]> {
  const events = await session.read({ from: 0, limit: 10000 })
  return events.filter((e) => e.type === 'user/message' && e.data.origin === 'controller').map((e) => e.data.text)
}

export interface SupervisedSession {
  host: TestHost
  cwd: string
  session: Session
}

/**
 * Mocha hooks for a suite: before each test a host (`boot`, default: the supervisor with automatic
 * continuation off), a fresh workspace (`files`) and a session on it (`open`, default: a plain session), handed to
 * `assign`; after it, the host is disposed and the workspace removed.
 */
export function useSupervisedSession(assign: (env: SupervisedSession) => void, options: {
  boot?: () => Promise<TestHost>
  files?: () => Promise<string>
  open?: (host: TestHost, cwd: string) => Promise<Session>
} = {}) {
  const boot = options.boot ?? (() => bootSupervisor({ automaticContinuation: false }))
  const files = options.files ?? workspace
  const open = options.open ?? ((host, cwd) => host.ctx.sessions.create({ cwd }))
  let env: SupervisedSession | undefined
  beforeEach(async () => {
    const host = await boot()
    const cwd = await files()
    env = { host, cwd, session: await open(host, cwd) }
    assign(env)
  })
  afterEach(async () => {
    if (!env) return
    await env.host.dispose()
    await removeTree(env.cwd)
    env = undefined
  })
}
