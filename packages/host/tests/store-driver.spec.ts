import { expect } from 'chai'
import { Context } from 'cordis'
import { TestHost } from '@taskward/testkit'
import { driverOf, sharedStore, storeDriver } from '../src'

/*
 * `storeDriver` reads the database service from cordis' own tables instead of `ctx.get` (which wraps
 * it in a new tracing proxy per call): it must find exactly what `ctx.get('database')` finds, from the
 * root and from a plugin's context, follow the service going away and coming back, and find nothing
 * where there is no database.
 */
describe('host: the store driver behind a context', () => {
  let host: TestHost
  before(async () => { host = await TestHost.boot() })
  after(async () => { await host.dispose() })

  it('is the driver of ctx.get(\'database\'), from the root and from a plugin\'s context', () => {
    const expected = driverOf(host.ctx.get('database'))
    expect(expected, 'the embedded store has a driver').to.not.equal(undefined)
    expect(typeof expected.db?.prepare).to.equal('function')
    // Without cordis' lookup (its cost is the point).
    const reflect = Object.getPrototypeOf((host.ctx as any).reflect[Symbol.for('cordis.original')] ?? (host.ctx as any).reflect)
    const get = reflect.get
    let lookups = 0
    reflect.get = function (this: unknown, ...args: unknown[]) { lookups++; return get.apply(this, args) }
    try {
      expect(storeDriver(host.ctx)).to.equal(expected)
    } finally {
      reflect.get = get
    }
    expect(lookups).to.equal(0)
    let inner: Context | undefined
    const fork = host.ctx.plugin({ name: 'store-driver-probe', apply: (ctx: Context) => { inner = ctx } })
    try {
      expect(storeDriver(inner!)).to.equal(expected)
      expect(sharedStore(inner!)).to.equal(false)
    } finally {
      fork.dispose()
    }
  })

  it('is undefined where no database is provided, and follows a service provided and removed', () => {
    const ctx = new Context()
    expect(storeDriver(ctx)).to.equal(undefined)
    const driver = { db: {} }
    const dispose = ctx.set('database', { drivers: [driver] })
    expect(storeDriver(ctx)).to.equal(driver)
    expect(storeDriver(ctx)).to.equal(driverOf(ctx.get('database')))
    dispose()
    expect(storeDriver(ctx)).to.equal(undefined)
  })
})
