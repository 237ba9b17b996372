import { expect } from 'chai'
import { CARRIER_KIND, dropLeftoverCarriers, readCarried, withoutCarriers } from '../src/carrier'
import type { DshAgent, DshUserMessage } from '../src/dsh-types'

/*
 * Carriers a crash left queued (tests/dsh/carrier-crash.spec.ts drives the real DSH): only a message
 * whose `source.kind` is the carrier kind is one; every other message, whatever its text, is kept.
 */
const message = (id: string, kind: string, text = id): DshUserMessage => ({ id, role: 'user', content: [{ type: 'text', text }], source: { kind } })
const carrier = (id: string) => message(id, CARRIER_KIND, `[Taskward x; carried in the log, never sent to the model]`)

function fakeAgent(nextStep: DshUserMessage[], nextTurn: DshUserMessage[]) {
  const lists = { 'next-step': [...nextStep], 'next-turn': [...nextTurn] }
  const splices: unknown[][] = []
  const inbox = {
    get nextStep() { return lists['next-step'] },
    get nextTurn() { return lists['next-turn'] },
    splice(target: 'next-step' | 'next-turn', start: number, count: number, inserted: DshUserMessage[]) {
      splices.push([target, start, count, inserted.length])
      return lists[target].splice(start, count, ...inserted)
    },
  }
  return { agent: { inbox } as unknown as DshAgent, lists, splices }
}

describe('DSH adapter: carriers left queued by a crash', () => {
  it('a step\'s decision keeps every message that is not a carrier, in order', () => {
    const user = message('u', 'user', '[Taskward x; carried in the log, never sent to the model]')
    const plugin = message('p', 'plugin')
    const decision = { kind: 'enter', messages: [carrier('c1'), user, carrier('c2'), plugin], extra: 1 }
    expect(withoutCarriers(decision)).to.deep.equal({ kind: 'enter', messages: [user, plugin], extra: 1 })
    const clean = { kind: 'enter', messages: [user] }
    expect(withoutCarriers(clean)).to.equal(clean)
    const reject = { kind: 'reject' }
    expect(withoutCarriers(reject)).to.equal(reject)
  })

  it('removes queued carriers from both lists, one removal per run, and nothing else', () => {
    const user = message('u', 'user')
    const queued = message('q', 'user')
    const { agent, lists, splices } = fakeAgent([carrier('a'), carrier('b'), user, carrier('c')], [queued, carrier('d')])
    expect(dropLeftoverCarriers(agent)).to.equal(4)
    expect(lists['next-step']).to.deep.equal([user])
    expect(lists['next-turn']).to.deep.equal([queued])
    expect(splices).to.deep.equal([['next-step', 3, 1, 0], ['next-step', 0, 2, 0], ['next-turn', 1, 1, 0]])
    expect(dropLeftoverCarriers(agent)).to.equal(0)
    expect(splices).to.have.length(3)
  })
})

describe('DSH adapter: what is read as a carried event', () => {
  const source = { kind: CARRIER_KIND, session: 's1', type: 'extension/record', data: { recordId: 'r1' } }
  const splice = (data: Record<string, unknown>) => ({ type: 'agent/inbox/spliced', seq: 5, time: 0, data: { target: 'next-step', start: 0, ...data } })

  it('reads the insert writeCarried writes, not a splice that replaces a queued message (a DSH queue edit)', () => {
    const inserted = [{ id: 'taskward-1', role: 'user', content: [{ type: 'text', text: 'edited' }], source }]
    expect(readCarried(splice({ inserted }), 's1')).to.deep.equal({ type: 'extension/record', data: { recordId: 'r1' } })
    // session.updateQueue's edit keeps the message's source: a replacement, not a record written now.
    expect(readCarried(splice({ removedCount: 1, inserted, outcome: 'canceled' }), 's1')).to.equal(undefined)
    expect(readCarried(splice({ inserted }), 's2')).to.equal(undefined)
  })
})
