import { expect } from 'chai'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { mockText, type OpenAIMock } from '@taskward/testkit'
import { packedBundle, useDsh, type DshHome, type DshWeb } from './dsh-host'
import { execute, replyJson, waitFor } from './dsh-api'
import { dshTaskPlayer } from './dsh-player'

/*
 * Seed 000 inside the real DSH (rc.8): a supervised session is refused, not run unsupervised, when the
 * bundle's row is disabled or the bundle is removed — by DSH's own resume (the `taskward` agent
 * preset's guard row cannot activate), with no Taskward code loaded — and runs again once the bundle
 * is back.
 */
describe('a supervised session inside the real DSH host without the bundle', function () {
  this.timeout(600_000)
  let model: OpenAIMock
  let home: DshHome
  let web: DshWeb | undefined
  let workspace: string

  // Each case starts DSH itself (with the bundle, without it, with it again).
  useDsh({ player: dshTaskPlayer(), workspace: 'unsupervised', start: false }, (dsh) => ({ model, home, workspace } = dsh))

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && web) console.log(web.output.slice(-4000))
  })

  const prompt = (sessionId: string, text: string) =>
    web!.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text }] })

  it('refuses the session with the row disabled or the bundle removed, before any model request; runs it again with the bundle back', async () => {
    web = await home.start()
    const { sessionId } = await web.api('session.create', { cwd: workspace })
    await execute(web, sessionId, '/task new Write a.txt and b.txt')
    await waitFor(async () => replyJson(await execute(web!, sessionId, '/task status --json')).task?.phase === 'awaiting-approval', 'the plan review to pass', 60_000)
    // The session now resumes under the `taskward` preset (a DSH event of a type rc.8 knows).
    const history = await web.api('session.history', { sessionId })
    const types = history.events.map(({ event }: any) => `${event.type}${event.type === 'agent-preset/selected' ? `=${event.data.agentPreset}` : ''}`)
    expect(types).to.include('agent-preset/selected=taskward')
    // A consultation of it (/task consult): its marker selected the same preset, so it is refused too.
    const consultation = replyJson(await execute(web, sessionId, '/task consult')).sessionId as string
    expect(consultation).to.be.a('string')
    const consulted = await web.api('session.history', { sessionId: consultation })
    expect(consulted.events.map(({ event }: any) => event.type === 'agent-preset/selected' ? event.data.agentPreset : '')).to.include('taskward')
    // An unsupervised session (no Taskward record) for contrast: it must keep working without the bundle.
    const { sessionId: plain } = await web.api('session.create', { cwd: workspace })
    await web.stop()

    // 1. The bundle's row disabled (its package still installed).
    await writeFile(join(home.home, 'profiles', 'web', 'cordis.patch.yml'), JSON.stringify([{ id: 'taskward', disabled: true }]) + '\n')
    web = await home.start({ taskward: false })
    let served = model.requests.length
    let refusal = await prompt(sessionId, 'Carry on without supervision.').then(() => undefined, (error: Error) => error.message)
    // DSH's own refusal ('resume failed … preset "taskward" failed to mount: … waiting for taskwardSupervision').
    expect(refusal, 'prompt of a supervised session with the row disabled').to.match(/"ok":false/).and.match(/preset \\"taskward\\" failed to mount/)
    refusal = await prompt(consultation, 'Consult without supervision.').then(() => undefined, (error: Error) => error.message)
    expect(refusal, 'prompt of a consultation with the row disabled').to.match(/"ok":false/).and.match(/preset \\"taskward\\" failed to mount/)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect(model.requests.length).to.equal(served)
    await web.stop()

    // 2. The bundle removed; the hmr row kept by the user (docs/dsh.md).
    await writeFile(join(home.home, 'profiles', 'web', 'cordis.patch.yml'), '[]\n')
    await home.removeBundle()
    await writeFile(join(home.home, 'cordis.patch.yml'), JSON.stringify([{ id: 'hmr', disabled: false }]) + '\n')
    web = await home.start({ taskward: false })
    expect((await fetch(`${web.origin}/taskward/health`).then((r) => r.text())).includes('"taskward":true')).to.equal(false)
    served = model.requests.length
    refusal = await prompt(sessionId, 'Carry on without supervision.').then(() => undefined, (error: Error) => error.message)
    expect(refusal, 'prompt of a supervised session without the bundle').to.match(/"ok":false/).and.match(/preset \\"taskward\\" failed to mount/)
    refusal = await prompt(consultation, 'Consult without supervision.').then(() => undefined, (error: Error) => error.message)
    expect(refusal, 'prompt of a consultation without the bundle').to.match(/"ok":false/).and.match(/preset \\"taskward\\" failed to mount/)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect(model.requests.length).to.equal(served)
    // A session Taskward never wrote into runs as before.
    model.script(mockText('hello from an unsupervised session'))
    await prompt(plain, 'Say hello.')
    await waitFor(() => model.requests.length > served, 'the unsupervised session\'s model request')
    await web.stop()

    // 3. The bundle back: the session resumes, supervised.
    await home.addBundle(await packedBundle())
    web = await home.start()
    served = model.requests.length
    model.script(mockText('Back under supervision.'))
    await prompt(sessionId, 'Carry on.')
    await waitFor(() => model.requests.length > served, 'the supervised session\'s model request')
    const status = replyJson(await execute(web, sessionId, '/task status --json'))
    expect(status.task?.phase).to.equal('awaiting-approval')
    // The supervisor's tools are offered to it again.
    expect(model.requests[served].body.tools.map((t: any) => t.function.name)).to.include('task_status')
  })
})
