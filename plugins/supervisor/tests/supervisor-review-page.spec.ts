import { expect } from 'chai'
import type { Session } from '@taskward/host'
import { REVIEW_PAGE_MAX_BYTES, utf8Length } from '@taskward/protocol'
import { PAGE_KEYS, pageShape, STAGE_PAGE_SHAPE, type TestHost } from '@taskward/testkit'
import { allIdle, bootSupervisor, command, reviewsSettled, SMALL_PLAN, supervisorOf, turn, until, useSupervisedSession, verdict } from './fixtures'

/*
 * The stage review of one node, played as tests/dsh/task.spec.ts plays it inside DSH (task_status
 * before every step): the reviewer reads from where the prompt says the attempt's work starts, and
 * gets the same page shape as there (STAGE_PAGE_SHAPE, packages/testkit).
 */
describe('supervisor: a stage review\'s page (same shape on both hosts)', () => {
  let host: TestHost
  let session: Session
  // The controller drives the main agent's turns, as in DSH.
  useSupervisedSession((env) => ({ host, session } = env), {
    boot: () => bootSupervisor(),
    open: async (h, cwd) => (await supervisorOf(h).startSession({ cwd })).session,
  })

  it('reads the node\'s work from the seq the prompt names: messages, tool calls with their arguments, results', async () => {
    host.scripted.script('main', [
      ...turn([{ name: 'task_submit_plan', args: SMALL_PLAN }]),
      ...turn(
        [{ name: 'task_status' }], [{ name: 'task_start_node', args: { nodeId: 'a' } }], [{ name: 'task_status' }],
        [{ name: 'write', args: { path: 'a.txt', content: 'a done\n' } }], [{ name: 'task_status' }],
        [{ name: 'task_report_stage', args: { nodeId: 'a', summary: 'wrote a.txt' } }],
      ),
      { text: 'Waiting for the review.' },
      { text: 'Waiting.' },
    ])
    const pages: any[] = []
    let prompt = ''
    host.scripted.script('reviewer', [
      verdict('pass'),
      ({ input }) => {
        prompt = input.text
        const after = Number(/logged after seq (\d+)/.exec(input.text)?.[1])
        return { toolCalls: [{ name: 'review_read_log', args: { from: after + 1, limit: 50 } }] }
      },
      ({ results }) => { pages.push(results[0].result); return verdict('pass') },
    ])
    await command(host, session, '/task new greet the user')
    await until(async () => (await supervisorOf(host).state(session)).current!.phase === 'awaiting-approval', 'plan approval')
    await allIdle(host, session)
    await command(host, session, '/task approve')
    await until(async () => (await supervisorOf(host).state(session)).current!.nodeRuns.a?.status === 'passed', 'node a to pass')
    await reviewsSettled(host, session)
    const run = (await supervisorOf(host).state(session)).current!.nodeRuns.a
    expect(prompt).to.include(`Its attempt's work is logged after seq ${run.evidenceAfterSeq}.`)
    const [page] = pages
    // The controller's follow-up that started the turn, then the node's work.
    expect(pageShape(page)).to.deep.equal(['user/message {seq,text,type}', ...STAGE_PAGE_SHAPE])
    expect(Object.keys(page).sort()).to.deep.equal(PAGE_KEYS)
    expect(page.events[7].args).to.deep.equal({ path: 'a.txt', content: 'a done\n' })
    expect(utf8Length(JSON.stringify(page, null, 2))).to.be.at.most(REVIEW_PAGE_MAX_BYTES)
  })
})
