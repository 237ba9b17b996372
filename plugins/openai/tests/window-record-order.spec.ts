import { expect } from 'chai'
import { storeDriver } from '@taskward/host'
import { EventTypes } from '@taskward/protocol'
import { mockText } from '@taskward/testkit'
import { WINDOW_EVENT } from '../src/window-record'
import { until } from './helpers'
import { bootRoute, useRig } from './loopback'

describe('plugin-openai: the window record and the request it describes', function () {
  this.timeout(30_000)
  const rig = useRig({ boot: (mock) => bootRoute(mock) })

  it('sends the request while a commit outside the step waits for its fsync; the log still orders commit, window, answer', async () => {
    const agent = await rig.agent()
    const session = agent.session
    await session.append(EventTypes.userMessage, { text: 'is it done?', origin: 'user' }, { commit: true })
    rig.mock.script(mockText('It is done.'))
    // A disk slow to flush: every wait for durability of the store holds until released.
    const flusher = storeDriver(rig.host.ctx).flusher
    const durable = flusher.durable.bind(flusher)
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    flusher.durable = () => held.then(durable)
    try {
      // An operator command's reply, committed outside the step (as commands.input does), not durable yet.
      const reply = session.append(EventTypes.commandReply, { command: 'note', replyTo: 0, reply: null }, { commit: true })
      agent.followup('is it done?', { origin: 'user', recorded: true })
      await until(() => rig.mock.requests.length === 1, 'the model request while the reply waits for its fsync', 5_000)
      release()
      await reply
    } finally {
      release()
      flusher.durable = durable
    }
    // As helpers' runTurn: whenIdle() answers at once for a turn still only queued; let the queue drain first.
    await new Promise((resolve) => setTimeout(resolve, 0))
    await agent.whenIdle()
    const events = await session.read({ from: 0, limit: 100 })
    const seqOf = (type: string) => events.find((event) => event.type === type)?.seq ?? -1
    expect(seqOf(EventTypes.commandReply)).to.be.greaterThan(-1)
    expect(seqOf(WINDOW_EVENT)).to.be.greaterThan(seqOf(EventTypes.commandReply))
    expect(seqOf(EventTypes.assistantMessage)).to.be.greaterThan(seqOf(WINDOW_EVENT))
    expect(events.map((event) => event.seq)).to.deep.equal(events.map((_, i) => i))
  })
})
