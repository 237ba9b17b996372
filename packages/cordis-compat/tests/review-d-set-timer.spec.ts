import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { Context } from 'cordis'
import { setTimer } from '@taskward/cordis-compat'

/*
 * Review-d (f6ab88c): setTimer starts the timer before it ties it to the plugin. When the plugin is no
 * longer active (disposed, or cordis 4's UNLOADING while its disposers run — recovery's `stopping`
 * abort is its first effect, so it runs last), `ctx.effect` throws INACTIVE_EFFECT: the caller gets
 * the throw, and the timer is left running; when it fires it calls `cancel`, still in its temporal dead
 * zone — an uncaught ReferenceError, which ends the process (on DSH, DSH itself).
 */
const DSH_CORDIS = '/root/.cache/taskward/dsh-0.1.0-rc.8-node-24.22.3/node_modules/@deepseek-ai/cordis/lib/index.js'

async function disposedPluginContext(Root: new () => any) {
  const root = new Root()
  let pluginCtx: any
  const fiber = root.plugin({ name: 'review-d-timer', apply: (ctx: any) => { pluginCtx = ctx } })
  await new Promise((resolve) => setTimeout(resolve, 10))
  await fiber.dispose()
  return pluginCtx as Context
}

async function uncaughtAfterLateTimer(ctx: Context) {
  const uncaught: string[] = []
  const listeners = process.listeners('uncaughtException')
  process.removeAllListeners('uncaughtException')
  const record = (error: Error) => { uncaught.push(`${error.name}: ${error.message}`) }
  process.on('uncaughtException', record)
  let fired = false
  try {
    try {
      setTimer(ctx, () => { fired = true }, 5)
    } catch {
      // Refusing the timer is fine; leaving it running is not.
    }
    await new Promise((resolve) => setTimeout(resolve, 40))
  } finally {
    process.off('uncaughtException', record)
    for (const listener of listeners) process.on('uncaughtException', listener)
  }
  return { uncaught, fired }
}

describe('review-d: setTimer asked for by a plugin that is no longer active', () => {
  it('cordis 3: leaves no timer behind that throws when it fires', async () => {
    const outcome = await uncaughtAfterLateTimer(await disposedPluginContext(Context as any))
    expect(outcome.uncaught, 'uncaught errors after the late setTimer').to.deep.equal([])
    expect(outcome.fired, 'a disposed plugin\'s callback ran').to.equal(false)
  })

  it('cordis 4 (DSH\'s @deepseek-ai/cordis): leaves no timer behind that throws when it fires', async function () {
    if (!existsSync(DSH_CORDIS)) this.skip()
    const { Context: Cordis4 } = await import(DSH_CORDIS)
    const outcome = await uncaughtAfterLateTimer(await disposedPluginContext(Cordis4))
    expect(outcome.uncaught, 'uncaught errors after the late setTimer').to.deep.equal([])
    expect(outcome.fired, 'a disposed plugin\'s callback ran').to.equal(false)
  })
})
