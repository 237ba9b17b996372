import { expect } from 'chai'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { AgentClaim, AgentRequest, foldRecoveryLog, RecoveryDecision } from '../src'
import { AttemptOptions, CheckLine, digest, RecoveryLog } from './fixtures/recovery/harness'

const GOLDEN = fileURLToPath(new URL('./fixtures/recovery/golden-decisions.json', import.meta.url))

interface Step {
  options: AttemptOptions
  completion?: boolean
  /** What an agent may add without changing anything: requests, a claim, a strategy proposal. */
  noise?: { requests?: AgentRequest[], claim?: AgentClaim, proposal?: string }
}

const fail = (id: string, output: string): CheckLine => [id, 'FAIL', output]

/** One session: two tasks, covering every rule of `decide`. */
const SCRIPT: { taskId: string, steps: Step[] }[] = [{
  taskId: 'task-1',
  steps: [
    { options: { candidate: digest('A'), checks: [fail('unit', 'Cannot find module ./parser'), ['lint', 'PASS']] },
      noise: { requests: [{ type: 'retry', text: 'I am sure this is right, retry' }], claim: 'done' } },
    { options: { candidate: digest('B'), checks: [fail('unit', 'parse is not a function'), ['lint', 'PASS']] },
      noise: { proposal: 'switch to a hand-written parser' } },
    { options: { candidate: digest('B'), checks: [fail('unit', 'parse is not a function'), ['lint', 'PASS']] },
      noise: { requests: [{ type: 'strategy', text: 'let me keep going instead' }], claim: 'done' } },
    { options: { candidate: digest('C'), checks: [fail('unit', 'expected tokens to equal [...]'), ['lint', 'PASS']] } },
    { options: { candidate: digest('D'), checks: [['unit', 'INCONCLUSIVE'], ['lint', 'PASS']] }, completion: true,
      noise: { requests: [{ type: 'retry', text: 'just rerun it' }] } },
    { options: { candidate: digest('D'), checks: [fail('unit', 'expected tokens to equal [...]'), ['lint', 'PASS']], rerun: true } },
    { options: { candidate: digest('E'), checks: [fail('unit', 'unexpected token at line 3'), ['lint', 'PASS']] }, noise: { claim: 'progress' } },
    { options: { candidate: digest('F'), checks: [fail('unit', 'unterminated string'), ['lint', 'PASS']] }, noise: { claim: 'blocked' } },
    { options: { candidate: digest('G'), checks: [fail('unit', 'unexpected token at line 9'), ['lint', 'PASS']] },
      noise: { requests: [{ type: 'retry', text: 'one more please' }], claim: 'done', proposal: 'give up on tests' } },
    { options: { candidate: digest('H'), checks: [['unit', 'PASS'], ['lint', 'PASS']] }, noise: { claim: 'progress' } },
    { options: { candidate: digest('H2'), checks: [['unit', 'PASS'], ['lint', 'PASS']], claim: 'done' } },
  ],
}, {
  taskId: 'task-2',
  steps: [
    { options: { candidate: digest('I'), checks: [['unit', 'PASS']], parent: digest('moved externally') }, completion: true,
      noise: { requests: [{ type: 'retry', text: 'the ref is fine, accept it' }] } },
    { options: { candidate: digest('J'), checks: [], parent: digest('H2') }, completion: true, noise: { claim: 'done' } },
  ],
}]

function replay(withNoise: boolean): { decisions: RecoveryDecision[], log: RecoveryLog } {
  const log = new RecoveryLog()
  const decisions: RecoveryDecision[] = []
  for (const task of SCRIPT) {
    log.taskId = task.taskId
    for (const { options, completion, noise } of task.steps) {
      const extra = withNoise && noise ? noise : {}
      if (withNoise && noise?.proposal) {
        log.append('strategy', { taskId: task.taskId, text: noise.proposal, proposedBy: 'agent', at: 1 })
      }
      log.attempt({ ...options, ...extra.requests ? { requests: extra.requests } : {}, ...extra.claim && !options.claim ? { claim: extra.claim } : {} })
      decisions.push(log.decide({}, completion))
    }
  }
  return { decisions, log }
}

describe('recovery golden replay', () => {
  it('gives byte-identical decisions with and without injected agent requests, equal to the golden file', () => {
    const plain = replay(false)
    const noisy = replay(true)
    const json = JSON.stringify(plain.decisions, null, 2) + '\n'
    expect(JSON.stringify(noisy.decisions, null, 2) + '\n').to.equal(json)
    expect(noisy.log.events.length).to.be.greaterThan(plain.log.events.length)
    if (process.env.RECOVERY_GOLDEN_UPDATE === '1') writeFileSync(GOLDEN, json)
    expect(json).to.equal(readFileSync(GOLDEN, 'utf8'))
  })

  it('covers the rules it pins, in the order the script exercises them', () => {
    const { decisions } = replay(false)
    expect(decisions.map((d) => `${d.action}:${d.reason}`)).to.deep.equal([
      'RETRY:FAIL_FIRST_ATTEMPT',
      'RETRY:FAIL_PROGRESS',
      'CHANGE_STRATEGY:FAIL_STAGNATION_IDENTICAL',
      'RETRY:FAIL_PROGRESS',
      'REVERIFY:INCONCLUSIVE_RERUN',
      'CHANGE_STRATEGY:FAIL_STAGNATION_IDENTICAL',
      'RETRY:FAIL_PROGRESS',
      'RETRY:FAIL_PROGRESS',
      'STOP:FAIL_STAGNATION_PINGPONG',
      'RETRY:PASS_CONTINUE',
      'COMPLETE:PASS_COMPLETION_REQUESTED',
      'REJECT_CANDIDATE:CANDIDATE_NOT_DESCENDANT',
      'STOP:VALIDATION_MISSING',
    ])
  })

  it('rebuilds the same state from the noisy log, apart from the count of ignored requests', () => {
    const { log } = replay(true)
    const refolded = foldRecoveryLog(log.events)
    expect(refolded).to.deep.equal(log.state)
    expect(refolded.authoritative).to.equal(digest('H2'))
    expect(refolded.tasks['task-1'].agentRequests).to.equal(6)
  })
})
