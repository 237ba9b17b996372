/*
 * Write the golden session logs of this release: real runs through a real host (SQLite file, the
 * workspace, admission, supervisor, repair and recovery plugins, the scripted model for the agents and
 * reviewers, real check processes), exported as JSONL with the projection timeline and the decisions
 * today's code derives from them. Run once per release and commit the output; it refuses to write into
 * a directory that exists — fixtures are never edited, later releases add their own.
 *
 *   node --import tsx --conditions source scripts/record-golden-logs.ts [--release <name>] [--out <dir>]
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Session } from '@taskward/host'
import { AdmissionService } from '@taskward/plugin-admission'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { RepairPlugin } from '@taskward/plugin-repair'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import {
  RECOVERY_NAMESPACE, RECOVERY_SCHEMA_VERSION, REPAIR_NAMESPACE, REPAIR_SCHEMA_VERSION, REVIEW_SCHEMA_VERSION,
  SUPERVISOR_PROJECTION_VERSION, TASK_NAMESPACE, TASK_SCHEMA_VERSION, type SessionEvent,
} from '@taskward/protocol'
import { removeTree, TestHost, tempWorkspace } from '@taskward/testkit'
import { canonicalJson, divergentDecisions, replayEvents } from './replay.lib'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Passes when answer.txt says "right"; its failure names the wrong answer. */
const ANSWER_CHECK = {
  id: 'answer',
  argv: ['sh', '-c', 'test "$(cat answer.txt)" = right || { echo "wrong answer: $(cat answer.txt)"; exit 1; }'],
  timeoutMs: 20_000,
}

const PLAN = {
  acceptanceCriteria: ['the answer is right'],
  nodes: [{ id: 'a', title: 'find the answer' }, { id: 'b', title: 'check the answer' }, { id: 'c', title: 'write it down', dependsOn: [] }],
}

interface Scenario {
  name: string
  describe: string
  budgets?: Record<string, number>
  run(env: Env): Promise<void>
}

interface Env {
  host: TestHost
  session: Session
  cwd: string
}

async function settle(env: Env) {
  const { host, session } = env
  for (let i = 0; i < 2000; i++) {
    const state = await host.ctx.supervisor.state(session)
    const reviewing = state.reviews.some((job) => job.status === 'requested')
    const busy = host.ctx.agents.list().some((agent) => agent.session.role === 'reviewer' && (agent.state !== 'idle' || agent.queued))
    if (!reviewing && !busy) break
    await new Promise((r) => setTimeout(r, 10))
  }
  await host.ctx.recovery.settled()
}

function review(env: Env, ...verdicts: ('pass' | 'revise')[]) {
  env.host.scripted.script('reviewer', verdicts.map((verdict) => ({
    toolCalls: [{ name: 'review_verdict', args: { verdict, findings: verdict === 'pass' ? [] : ['not there yet'], evidenceSeqs: [] } }],
  })))
}

async function tool(env: Env, name: string, args: Record<string, unknown> = {}, expectError?: string) {
  const outcome = await env.host.ctx.tools.execute(env.session, name, args, { agentId: env.session.id })
  const wrong = expectError === '*' ? !outcome.error : expectError ? outcome.error?.code !== expectError : outcome.error
  if (wrong) {
    throw new Error(`${name}: expected ${expectError ?? 'success'}, got ${JSON.stringify(outcome.error ?? outcome.result)}`)
  }
  await settle(env)
  return outcome.result
}

async function command(env: Env, text: string) {
  const answer = await env.host.ctx.commands.input(env.session, text)
  if (answer?.error) throw new Error(`${text}: ${answer.error.code} ${answer.error.message}`)
  await settle(env)
  return answer?.reply
}

async function setAnswer(env: Env, answer: string) {
  await tool(env, 'write', { path: 'answer.txt', content: answer })
}

/** /task new → plan review (revise, then pass) → approve → every node with its stage review → completion. */
/** `/task new`, the plan submitted (revised once first if asked) and passed, then approved. */
async function approvedPlan(env: Env, objective: string, options: { reviseFirst?: boolean } = {}) {
  await command(env, `/task new ${objective}`)
  review(env, options.reviseFirst ? 'revise' : 'pass')
  await tool(env, 'task_submit_plan', PLAN)
  if (options.reviseFirst) {
    review(env, 'pass')
    await tool(env, 'task_submit_plan', PLAN)
  }
  await command(env, '/task approve')
}

/** Each node started and its stage reported, the stage review passing. */
async function runStages(env: Env, nodeIds = PLAN.nodes.map((node) => node.id)) {
  for (const nodeId of nodeIds) {
    await tool(env, 'task_start_node', { nodeId })
    review(env, 'pass')
    await tool(env, 'task_report_stage', { nodeId })
  }
}

async function completeTask(env: Env, objective: string, options: { reviseFirst?: boolean } = {}) {
  await approvedPlan(env, objective, options)
  await runStages(env)
  await setAnswer(env, 'right')
  review(env, 'pass')
  await tool(env, 'task_request_completion', { summary: 'the answer is right' })
  const task = (await env.host.ctx.supervisor.state(env.session)).current!
  if (task.phase !== 'complete') throw new Error(`${objective}: the task is ${task.phase}, not complete`)
  return task
}

async function evidence(env: Env) {
  await tool(env, 'read', { path: 'answer.txt' })
  return env.session.seq - 1
}

async function confirm(env: Env, proposal: { proposalId: string, taskId: string, revision: number }) {
  const outcome = await env.host.ctx.repair.confirm(env.session.id, { proposalId: proposal.proposalId, taskId: proposal.taskId, revision: proposal.revision })
  await settle(env)
  return outcome
}

/** Finish a reopened task: the affected nodes again, then completion. */
async function finishReopened(env: Env, nodeIds: string[]) {
  await runStages(env, nodeIds)
  review(env, 'pass')
  await tool(env, 'task_request_completion', { summary: 'repaired' })
}

const SCENARIOS: Scenario[] = [
  {
    name: 'full-task',
    describe: 'A task from /task new to complete: a revised then passing plan review, stage reviews, stage reports verified by a failing check, a completion request vetoed by it (CHANGE_STRATEGY: the same failure again), a retry request, then a passing completion (COMPLETE, journal promotion) and the completion review.',
    async run(env) {
      await approvedPlan(env, 'get the answer right', { reviseFirst: true })
      await runStages(env)
      await tool(env, 'task_request_completion', { summary: 'done, I think' }, 'VERDICT_NEGATIVE')
      await tool(env, 'task_request_retry', { reason: 'let me try again' })
      await setAnswer(env, 'right')
      review(env, 'pass')
      await tool(env, 'task_request_completion', { summary: 'the answer is right' })
    },
  },
  {
    name: 'repair-cycle',
    describe: 'A complete task; a repair proposal declined; a second one superseded by a third; the third confirmed (receipt, reopen to acceptance cycle 2) and the reopened nodes finished again.',
    async run(env) {
      const task = await completeTask(env, 'get the answer right')
      const first = await tool(env, 'task_propose_repair', { title: 'answer wrong', reason: 'the answer is wrong after all', rootNodeIds: ['a'], evidenceSeqs: [await evidence(env)] })
      await env.host.ctx.repair.decline(env.session.id, { proposalId: first.proposalId, taskId: task.id, revision: first.revision })
      await tool(env, 'task_propose_repair', { title: 'check is weak', reason: 'the check misses a case', rootNodeIds: ['b'], evidenceSeqs: [await evidence(env)] })
      const third = await tool(env, 'task_propose_repair', { title: 'answer and check', reason: 'both the answer and its check are wrong', rootNodeIds: ['a'], evidenceSeqs: [await evidence(env)] })
      const outcome = await confirm(env, third)
      if (outcome.outcome !== 'reopened') throw new Error(`confirm: ${outcome.outcome}`)
      const again = await confirm(env, third)
      if (again.outcome !== 'already-applied') throw new Error(`second confirm: ${again.outcome}`)
      await finishReopened(env, ['a', 'b'])
    },
  },
  {
    name: 'recovery-stop',
    describe: 'Recovery stops a task twice: stage reports and a completion request fail the same way, which is stagnation with no strategy change left (STOP stagnation); after /task resume a changed failure is progress (RETRY), and the next completion request uses up the attempts (STOP budget_exhausted:attempts).',
    budgets: { maxStrategyChanges: 0, maxAttempts: 6 },
    async run(env) {
      await approvedPlan(env, 'get the answer right')
      await runStages(env)
      await tool(env, 'task_request_completion', { summary: 'done' }, '*')
      await command(env, '/task resume')
      await setAnswer(env, 'still wrong')
      await tool(env, 'task_request_completion', { summary: 'done, really' }, '*')
      await setAnswer(env, 'wrong again')
      await tool(env, 'task_request_completion', { summary: 'done at last' }, '*')
      const decisions = (await env.host.ctx.recovery.state(env.session)).tasks
      const stops = Object.values(decisions).flatMap((task) => task.decisions).filter((d) => d.action === 'STOP').map((d) => d.stopReason)
      if (!stops.includes('stagnation') || !stops.includes('budget_exhausted:attempts')) throw new Error(`recovery-stop: stops were ${stops.join(', ')}`)
      const task = (await env.host.ctx.supervisor.state(env.session)).current!
      if (task.phase !== 'paused') throw new Error(`recovery-stop: the task is ${task.phase}, not paused`)
    },
  },
  {
    name: 'historical-reopen',
    describe: 'Two tasks complete one after the other; a repair of the first (historical) task is confirmed: it comes back as the current task and the second is archived; then it completes again.',
    async run(env) {
      const first = await completeTask(env, 'get the answer right', { reviseFirst: true })
      await completeTask(env, 'write the answer down')
      const proposal = await tool(env, 'task_propose_repair', {
        taskId: first.id, revision: first.revision, title: 'first answer', reason: 'the first task left a wrong answer', rootNodeIds: ['c'], evidenceSeqs: [await evidence(env)],
      })
      const outcome = await confirm(env, proposal)
      if (outcome.outcome !== 'reopened' || outcome.taskId !== first.id) throw new Error(`historical confirm: ${JSON.stringify(outcome)}`)
      await finishReopened(env, ['c'])
    },
  },
]

async function exportEvents(session: Session): Promise<SessionEvent[]> {
  const events: SessionEvent[] = []
  for await (const event of session.events()) events.push(event)
  return events
}

async function main() {
  const args = process.argv.slice(2)
  const option = (name: string) => {
    const at = args.indexOf(name)
    return at >= 0 ? args[at + 1] : undefined
  }
  const version = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')).version as string
  const release = option('--release') ?? `v${version}`
  const out = resolve(option('--out') ?? join(root, 'tests', 'fixtures', 'logs'), release)
  if (existsSync(out)) {
    console.error(`${out} exists. Golden logs are never rewritten: record a new release under another name (--release).`)
    process.exit(2)
  }
  const written: { name: string, describe: string, events: number, decisions: number }[] = []
  const staged: [string, string][] = []
  for (const scenario of SCENARIOS) {
    const host = await TestHost.boot({
      plugins: [
        [WorkspacePlugin, {}], [AdmissionService, {}], [SupervisorPlugin, { automaticContinuation: false }], [RepairPlugin, {}],
        [RecoveryPlugin, { checks: [ANSWER_CHECK], sandbox: 'copy', ...scenario.budgets ? { budgets: scenario.budgets } : {} }],
      ],
      waitFor: ['workspace', 'admission', 'supervisor', 'repair', 'recovery'],
    })
    const cwd = await tempWorkspace({ 'answer.txt': 'alpha', 'README.md': '# answers\n' })
    try {
      const { session } = await host.ctx.supervisor.startSession({ cwd })
      await scenario.run({ host, session, cwd })
      await host.ctx.recovery.settled()
      const events = await exportEvents(session)
      const replay = replayEvents(events)
      const diverging = divergentDecisions(replay)
      if (diverging.length) throw new Error(`${scenario.name}: a recorded decision is not re-derived: ${JSON.stringify(diverging[0])}`)
      if (replay.final.supervisor.poisoned || replay.final.recovery.poisoned) throw new Error(`${scenario.name}: the log poisons a projection`)
      staged.push([`${scenario.name}.jsonl`, events.map((event) => JSON.stringify(event)).join('\n') + '\n'])
      staged.push([`${scenario.name}.expected.json`, JSON.stringify({
        session: scenario.name,
        describe: scenario.describe,
        timeline: replay.timeline,
        decisions: replay.decisions.map(({ seq, decisionId, recorded }) => ({ seq, decisionId, recorded })),
        final: JSON.parse(canonicalJson(replay.final)),
      }, null, 1) + '\n'])
      written.push({ name: scenario.name, describe: scenario.describe, events: events.length, decisions: replay.decisions.length })
    } finally {
      await host.dispose()
      await removeTree(cwd)
    }
  }
  await mkdir(out, { recursive: true })
  for (const [file, text] of staged) await writeFile(join(out, file), text, { flag: 'wx' })
  await writeFile(join(out, 'manifest.json'), JSON.stringify({
    release,
    packageVersion: version,
    recordedAt: new Date().toISOString(),
    generator: 'scripts/record-golden-logs.ts',
    namespaces: {
      [TASK_NAMESPACE]: TASK_SCHEMA_VERSION, [REPAIR_NAMESPACE]: REPAIR_SCHEMA_VERSION,
      'dsh-task-supervisor-review': REVIEW_SCHEMA_VERSION, [RECOVERY_NAMESPACE]: RECOVERY_SCHEMA_VERSION,
    },
    projections: { supervisor: SUPERVISOR_PROJECTION_VERSION },
    sessions: written,
    // Each file's sha256: the replay spec refuses a fixture that no longer matches (fixtures are never edited).
    files: Object.fromEntries(staged.map(([file, text]) => [file, createHash('sha256').update(text).digest('hex')])),
  }, null, 2) + '\n', { flag: 'wx' })
  console.log(`wrote ${written.length} golden sessions to ${out}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
