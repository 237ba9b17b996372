/*
 * Shared helpers of the repair suites (no tests here): a host with supervisor, workspace, admission
 * and repair; a main session with a live agent; a completed task; and counters of what was written.
 * Task driving reuses the supervisor suite's helpers.
 */
import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import { AdmissionService } from '@taskward/plugin-admission'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { REPAIR_NAMESPACE, TASK_NAMESPACE, type TaskPlan } from '@taskward/protocol'
import { TestHost, driveToCompletion, tempWorkspace } from '@taskward/testkit'
import { RepairPlugin } from '../src'
import {
  completedTask, controllerTurns, ok, reviewsSettled, scriptReviews, useSupervisedSession, type SupervisedSession,
} from '../../supervisor/tests/fixtures'

export {
  allIdle, call, command, commandError, completedTask, controllerTurns, ok, refused, reviewsSettled, scriptReviews, until,
} from '../../supervisor/tests/fixtures'

/** a → (b, c) → d, and e independent: b and c share the descendant d. */
export const DIAMOND = {
  acceptanceCriteria: ['totals are right', 'tests pass'],
  nodes: [
    { id: 'a', title: 'read input' },
    { id: 'b', title: 'sum rows', dependsOn: ['a'] },
    { id: 'c', title: 'sum columns', dependsOn: ['a'] },
    { id: 'd', title: 'report totals', dependsOn: ['b', 'c'] },
    { id: 'e', title: 'write docs', dependsOn: [] },
  ],
} satisfies TaskPlan

export interface BootOptions {
  workspace?: boolean
  admission?: boolean
}

export function repairPlugins(options: BootOptions = {}): [any, any][] {
  return [
    [SupervisorPlugin, { automaticContinuation: false }],
    ...(options.workspace === false ? [] : [[WorkspacePlugin, {}] as [any, any]]),
    ...(options.admission === false ? [] : [[AdmissionService, {}] as [any, any]]),
    [RepairPlugin, {}],
  ]
}

export async function bootRepair(options: BootOptions = {}) {
  return TestHost.boot({ plugins: repairPlugins(options), waitFor: ['supervisor', 'repair'] })
}

export const workspace = () => tempWorkspace({ 'src/totals.ts': 'export const total = (rows: number[]) => 0\n', 'README.md': '# totals\n' })

/** A main session with a live agent on `cwd`. */
export async function mainSession(host: TestHost, cwd: string): Promise<Session> {
  return (await host.ctx.supervisor.startSession({ cwd })).session
}

/** Drive a DIAMOND task to complete; returns it. */
export const completeDiamond = (host: TestHost, session: Session, objective = 'compute totals') =>
  completedTask(host, session, objective, DIAMOND)

/** A main-session evidence event: a tool result of `read`. */
export async function evidenceSeq(host: TestHost, session: Session): Promise<number> {
  await host.ctx.tools.execute(session, 'read', { path: 'src/totals.ts' }, { agentId: session.id })
  return session.seq - 1
}

/** Every record event of a namespace (and kind) in the session. */
export async function records(session: Session, namespace: string, kind?: string) {
  const events = await session.read({ from: 0, limit: 100000 })
  return events.filter((e) => e.type === 'extension/record' && e.data.namespace === namespace && (!kind || e.data.kind === kind))
}

/** The complete → active state records of the session (reopened tasks), in log order. */
export async function reopens(session: Session) {
  const last = new Map<string, string>()
  const found = []
  for (const event of await records(session, TASK_NAMESPACE)) {
    const task = event.data.payload
    if (last.get(task.id) === 'complete' && task.phase === 'active') found.push(event)
    last.set(task.id, task.phase)
  }
  return found
}

export const receipts = (session: Session) => records(session, REPAIR_NAMESPACE, 'confirm')

/** Count of controller follow-up turns so far. */
export const followups = async (session: Session) => (await controllerTurns(session)).length

export async function fileIs(cwd: string, path: string, content: string) {
  expect(await readFile(join(cwd, path), 'utf8')).to.equal(content)
}

/** After a reopen: the affected nodes (`nodeIds`, asserted) run again with passing reviews and the task completes again. */
export async function finishReopened(host: TestHost, session: Session, nodeIds: string[]) {
  const reopened = (await host.ctx.supervisor.state(session)).current!
  expect(Object.keys(reopened.nodeRuns).filter((id) => reopened.nodeRuns[id].status !== 'passed').sort()).to.deep.equal([...nodeIds].sort())
  return driveToCompletion(host, session)
}

/** Propose through the main agent's tool with a fresh evidence event; returns the tool's answer. */
export async function proposeRepair(host: TestHost, session: Session, rootNodeIds: string[], extra: Record<string, unknown> = {}) {
  const seq = await evidenceSeq(host, session)
  return ok(host, session, 'task_propose_repair', { title: `repair ${rootNodeIds.join('+')}`, reason: 'the totals are wrong', rootNodeIds, evidenceSeqs: [seq], ...extra })
}

/** The binding a console click sends. */
export const bindingOf = (answer: { proposalId: string, taskId: string, revision: number }) =>
  ({ proposalId: answer.proposalId, taskId: answer.taskId, revision: answer.revision })

/** The promise must reject with a TaskwardError of `code`; returns it. */
export async function rejects(promise: Promise<unknown>, code: string) {
  try {
    await promise
  } catch (error: any) {
    expect(error.code, error.message).to.equal(code)
    return error
  }
  expect.fail(`expected a ${code} refusal`)
}

/** Mocha hooks: a repair host, a fresh workspace and a main session with its agent for each test. */
export function useRepairSession(assign: (env: SupervisedSession) => void) {
  useSupervisedSession(assign, { boot: () => bootRepair(), files: workspace, open: mainSession })
}
