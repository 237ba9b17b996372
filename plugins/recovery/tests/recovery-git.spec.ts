import { expect } from 'chai'
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { removeTree, type TestHost } from '@taskward/testkit'
import {
  ANSWER_CHECK, answerWorkspace, bootRecovery, call, ok, phase, readyTask, recoveryRecords, reviewsSettled, setAnswer,
} from './fixtures'

/** git in `cwd` with a fixed identity; returns stdout trimmed. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Taskward Test', '-c', 'user.email=test@taskward.invalid', '-c', 'commit.gpgsign=false', ...args],
    { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
}

function commitAll(cwd: string, message: string): string {
  git(cwd, 'add', '-A')
  git(cwd, 'commit', '-q', '-m', message)
  return git(cwd, 'rev-parse', 'HEAD')
}

/** candidateSource: git — the candidate names what the checks ran on, and its ancestry is observed. */
describe('recovery: git candidates through a real host and a real repository', function () {
  this.timeout(30_000)
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    host = await bootRecovery({ candidateSource: 'git' })
    cwd = await answerWorkspace('right')
    git(cwd, 'init', '-q', '-b', 'main')
  })
  afterEach(async () => {
    await host?.ctx.recovery.settled()
    await host?.dispose()
    await removeTree(cwd)
  })

  it('a clean tree is its HEAD; a dirty tree is HEAD plus the stamp of the tree, never HEAD alone', async () => {
    const head = commitAll(cwd, 'right answer')
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    const clean = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(clean.candidate).to.deep.equal({ digest: head, source: 'git' })
    expect(clean.verdict).to.equal('PASS')

    await setAnswer(cwd, 'beta')
    const dirty = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    const stamp = await host.ctx.workspace.stamp(cwd)
    expect(dirty.verdict).to.equal('FAIL')
    expect(dirty.candidate.digest).to.not.equal(head)
    expect(dirty.candidate).to.include({ source: 'git', head, tree: stamp.digest })

    // An untracked file makes the tree dirty too.
    await setAnswer(cwd, 'right')
    writeFileSync(join(cwd, 'notes.txt'), 'scratch')
    const untracked = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(untracked.candidate.digest).to.not.equal(head)
    expect(untracked.candidate.digest).to.not.equal(dirty.candidate.digest)
  })

  it('an edit after COMPLETE, before the reviewer passes, is re-checked: the pass does not complete the task', async () => {
    const head = commitAll(cwd, 'right answer')
    const { session } = await readyTask(host, cwd, [ANSWER_CHECK])
    // The reviewer's turn starts after the edit: the working tree changes under the same HEAD.
    host.scripted.script('reviewer', [() => {
      writeFileSync(join(cwd, 'answer.txt'), 'edited during review')
      return { toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass', findings: [], evidenceSeqs: [] } }] }
    }])
    await ok(host, session, 'task_request_completion', {})
    await reviewsSettled(host, session)
    expect((await phase(host, session)).phase).to.equal('active')
    const decisions = (await recoveryRecords(session, 'decision')).map((d) => d.payload.action)
    expect(decisions).to.deep.equal(['COMPLETE', 'RETRY'])
    const attempts = (await recoveryRecords(session, 'attempt')).map((a) => a.payload)
    const last = attempts.at(-1)!
    expect(last.candidate).to.include({ head })
    expect(last.candidate.digest).to.not.equal(head)
    expect(last.checks[0].verdict).to.equal('FAIL')
  })

  it('rejects a HEAD that does not descend from the authoritative commit (git reset --hard to unrelated history)', async () => {
    const first = commitAll(cwd, 'right answer')
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
    expect(await host.ctx.recovery.decide(session, task.id, { completionRequested: true })).to.include({ action: 'COMPLETE' })
    expect((await host.ctx.recovery.state(session)).authoritative).to.equal(first)

    // A descendant is a legal successor: its parent is the authoritative commit.
    await setAnswer(cwd, 'right\n')
    const child = commitAll(cwd, 'newline')
    const legal = await host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' })
    expect(legal).to.include({ legal: true, parentCandidate: first })
    expect(legal.candidate.digest).to.equal(child)

    // Unrelated history with the same content: same tree, no common ancestor.
    git(cwd, 'checkout', '-q', '--orphan', 'elsewhere')
    const unrelated = commitAll(cwd, 'unrelated root')
    git(cwd, 'checkout', '-q', 'main')
    git(cwd, 'reset', '-q', '--hard', unrelated)
    const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
    expect(attempt.verdict).to.equal('PASS')
    expect(attempt.legal).to.equal(false)
    expect(attempt).to.not.have.property('parentCandidate')
    const decision = await host.ctx.recovery.decide(session, task.id, { completionRequested: true })
    expect(decision).to.include({ action: 'REJECT_CANDIDATE', reason: 'CANDIDATE_NOT_DESCENDANT', authoritative: first })

    // Through the gate: refused CANDIDATE_ILLEGAL, and the authoritative candidate stays.
    const outcome = await call(host, session, 'task_request_completion', {})
    expect(outcome.error?.code).to.equal('CANDIDATE_ILLEGAL')
    expect((await host.ctx.recovery.state(session)).authoritative).to.equal(first)
    expect((await recoveryRecords(session, 'receipt'))).to.have.length(1)
  })

  it('records the merge base as the parent when HEAD went back behind the authoritative commit', async () => {
    const base = commitAll(cwd, 'right answer')
    await setAnswer(cwd, 'right\n')
    const ahead = commitAll(cwd, 'newline')
    const { session, task } = await readyTask(host, cwd, [ANSWER_CHECK])
    await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
    expect(await host.ctx.recovery.decide(session, task.id, { completionRequested: true })).to.include({ action: 'COMPLETE' })
    expect((await host.ctx.recovery.state(session)).authoritative).to.equal(ahead)
    git(cwd, 'reset', '-q', '--hard', base)
    const attempt = await host.ctx.recovery.runChecks(session, task.id, { claim: 'done' })
    expect(attempt).to.include({ legal: false, parentCandidate: base })
    expect(await host.ctx.recovery.decide(session, task.id, { completionRequested: true })).to.include({ action: 'REJECT_CANDIDATE' })
  })
})
