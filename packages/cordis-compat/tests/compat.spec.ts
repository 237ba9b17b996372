import { expect } from 'chai'
import { Context } from 'cordis'
import { isActive, isCordis4, listenersOf, onDispose, provideService, setTimer } from '@taskward/cordis-compat'

class Counter {
  protected ctx: Context
  constructor(ctx: Context) {
    this.ctx = ctx
    provideService(ctx, 'counter', this)
  }

  /** Registers through the CALLER's context, as a cordis Service method does. */
  watch(callback: () => void) {
    return onDispose(this.ctx, callback)
  }
}

describe('cordis-compat on cordis 3', () => {
  it('provides a plain class instance as a service that dependents inject, gone with its plugin', async () => {
    const root = new Context()
    const fiber = root.plugin(Counter)
    let seen: unknown
    root.inject(['counter'], (ctx) => { seen = (ctx as any).counter })
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(isCordis4(root)).to.equal(false)
    expect(seen).to.be.an('object')
    expect(root.get('counter')).to.be.an('object')
    fiber.dispose()
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(root.get('counter')).to.equal(undefined)
  })

  it('hands callers a view whose ctx is theirs: what a method registers goes with the caller', async () => {
    const root = new Context()
    root.plugin(Counter)
    let disposed = 0
    const caller = root.inject(['counter'], (ctx) => { (ctx as any).counter.watch(() => { disposed++ }) })
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(disposed).to.equal(0)
    caller.dispose()
    expect(disposed).to.equal(1)
  })

  it('reports activity and lists listeners as plain functions', async () => {
    const root = new Context()
    let active = false
    const calls: unknown[] = []
    const fiber = root.plugin((ctx: Context) => {
      active = isActive(ctx)
      ctx.on('compat/test' as any, (value: unknown) => { calls.push(value) })
    })
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(active).to.equal(true)
    for (const listener of listenersOf(root, 'compat/test')) listener.call(null, 42)
    expect(calls).to.deep.equal([42])
    fiber.dispose()
    expect(listenersOf(root, 'compat/test')).to.deep.equal([])
  })

  it('runs a timer once, and never after its plugin is disposed or it is cleared', async () => {
    const root = new Context()
    const fired: string[] = []
    let pluginCtx!: Context
    const fiber = root.plugin((ctx: Context) => { pluginCtx = ctx })
    await new Promise((resolve) => setTimeout(resolve, 0))
    setTimer(pluginCtx, () => fired.push('ran'), 5)
    const clear = setTimer(pluginCtx, () => fired.push('cleared'), 5)
    clear()
    setTimer(pluginCtx, () => fired.push('disposed'), 30)
    await new Promise((resolve) => setTimeout(resolve, 15))
    fiber.dispose()
    await new Promise((resolve) => setTimeout(resolve, 40))
    expect(fired).to.deep.equal(['ran'])
  })
})
