import { expect } from 'chai'
import { removeTree, type TestHost } from '@taskward/testkit'
import { bootSupervisor, command, commandError, supervisorOf, workspace } from './fixtures'

describe('supervisor: /task subcommands added by other plugins', () => {
  let host: TestHost
  let cwd: string

  beforeEach(async () => {
    host = await bootSupervisor({ automaticContinuation: false })
    cwd = await workspace()
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
  })

  it('dispatches an added subcommand with its arguments, and forgets it when the adding plugin is disposed', async () => {
    const session = await host.ctx.sessions.create({ cwd })
    const fork = host.ctx.plugin({
      name: 'echo-subcommand',
      inject: ['supervisor'],
      apply: (ctx) => { ctx.supervisor.registerSubcommand('echo', ({ args }) => ({ echoed: args })) },
    })
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(await command(host, session, '/task echo  hello there')).to.deep.equal({ echoed: 'hello there' })
    fork.dispose()
    expect((await commandError(host, session, '/task echo hi')).code).to.equal('TASK_INVALID')
  })

  it('refuses built-in names and a name added twice', () => {
    const supervisor = supervisorOf(host)
    expect(() => supervisor.registerSubcommand('resume', () => null)).to.throw().with.property('code', 'CONFIG_INVALID')
    supervisor.registerSubcommand('twice', () => null)
    expect(() => supervisor.registerSubcommand('twice', () => null)).to.throw().with.property('code', 'CONFIG_INVALID')
  })
})
