import { expect } from 'chai'
import { TestHost } from '@taskward/testkit'
import { directEmitter, isHeard } from '../src'

/*
 * The hot-path emits (`session/event`, `agent/*`, `supervisor/changed`) skip cordis' dispatch: they
 * must reach exactly the listeners `ctx.emit` reaches, in order, with the same arguments, follow
 * listeners added and removed after the emitter was made, stop at a throw as `ctx.emit` does, and go
 * through `ctx.emit` while anyone watches every event (`internal/event`).
 */
describe('host: direct emits behave as ctx.emit', () => {
  let host: TestHost
  before(async () => { host = await TestHost.boot() })
  after(async () => { await host.dispose() })

  it('calls the listeners in order, follows later (un)registrations, stops at a throw, and honours internal/event', () => {
    const ctx = host.ctx as any
    const name = 'test/direct-emit'
    const emit = directEmitter<[string, number]>(ctx, name)
    expect(directEmitter(ctx, name)).to.equal(emit)
    expect(isHeard(ctx, name)).to.equal(false)
    emit('nobody', 0)

    const heard: string[] = []
    const first = ctx.on(name, (text: string, n: number) => { heard.push(`first ${text} ${n}`) })
    const second = ctx.on(name, (text: string, n: number) => { heard.push(`second ${text} ${n}`) })
    expect(isHeard(ctx, name)).to.equal(true)
    emit('a', 1)
    expect(heard).to.deep.equal(['first a 1', 'second a 1'])

    first()
    emit('b', 2)
    expect(heard.slice(2)).to.deep.equal(['second b 2'])

    const failing = ctx.on(name, () => { throw new Error('listener failed') }, { prepend: true })
    expect(() => emit('c', 3)).to.throw('listener failed')
    expect(heard).to.have.length(3)
    failing()

    const seen: unknown[] = []
    const watcher = ctx.on('internal/event', (type: string, event: string, args: unknown[]) => { if (event === name) seen.push([type, ...args]) })
    emit('d', 4)
    watcher()
    expect(seen).to.deep.equal([['emit', 'd', 4]])
    expect(heard.slice(3)).to.deep.equal(['second d 4'])
    second()
    expect(isHeard(ctx, name)).to.equal(false)
  })
})
