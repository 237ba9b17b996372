import { expect } from 'chai'
import { command, commandError } from '../plugins/supervisor/tests/fixtures'
import { bootDemoHost, type DemoHost } from './console-fixtures'

/** `/task` on our host when a repair proposal waits: it says so, with the impact panel's path. */
describe('/task with a pending repair proposal and the console loaded', function () {
  this.timeout(60_000)
  let demo: DemoHost
  before(async () => { demo = await bootDemoHost() })
  after(async () => { await demo?.dispose() })

  it('carries the impact panel link; /task console needs a connection that issues one-time links', async () => {
    const reply = await command(demo.host, demo.session, '/task')
    expect(reply.awaitingDecision).to.deep.equal({
      id: demo.outcome.proposalId,
      title: reply.proposals.find((p: any) => p.id === demo.outcome.proposalId).title,
      link: `/sessions/${demo.session.id}#impact`,
    })
    expect(reply.message).to.include(`/sessions/${demo.session.id}#impact`)
    // Our host's connection prints its login link at start and has no one-time links (yet).
    expect((await commandError(demo.host, demo.session, '/task console')).code).to.equal('TASK_INVALID')
  })
})
