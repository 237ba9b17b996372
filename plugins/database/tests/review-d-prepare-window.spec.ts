import { expect } from 'chai'
import { TestHost } from '@taskward/testkit'

/*
 * Review-d (prepare-guard.ts, acf6b51): while a table is being prepared (declared or extended at run
 * time, or prepared again after an outage), getDriver hands out a fresh Proxy of the driver on every
 * call. minato keys a transaction's drivers and a join's driver check by driver identity, so a
 * transaction or a join that touches such a table breaks while the preparation runs.
 */
describe('review-d: queries issued while a table is being prepared (prepare-guard\'s wrapped driver)', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  afterEach(async () => { await host?.dispose() })

  async function boot() {
    host = await TestHost.boot()
    const ctx = host.ctx as any
    ctx.model.extend('review_d_a', { id: 'unsigned', name: 'string' }, { autoInc: true })
    ctx.model.extend('review_d_b', { id: 'unsigned', aId: 'unsigned' }, { autoInc: true })
    await ctx.database.prepared()
    return ctx
  }

  it('a transaction of two inserts is one transaction (both rows written) while the table is prepared again', async () => {
    const ctx = await boot()
    // A plugin extends the table at run time: minato prepares it again (the guard marks it "preparing").
    ctx.model.extend('review_d_a', { note: 'string' })
    const written = ctx.database.withTransaction(async (database: any) => {
      await database.create('review_d_a', { name: 'one' })
      await database.create('review_d_a', { name: 'two' })
    }).then(() => 'ok', (error: any) => `${error?.code ?? ''} ${error?.message ?? error}`)
    // On acf6b51 it never settles: each create gets a new wrapper, so minato opens a second transaction
    // on the one SQLite connection inside the first (the event store's multi-event append does this).
    const outcome = await Promise.race([written, new Promise((resolve) => setTimeout(() => resolve('hung (10 s)'), 10_000))])
    expect(outcome).to.equal('ok')
    expect((await ctx.database.get('review_d_a', {})).map((row: any) => row.name)).to.deep.equal(['one', 'two'])
  })

  it('a join is served while one of its tables is prepared again', async () => {
    const ctx = await boot()
    const a = await ctx.database.create('review_d_a', { name: 'one' })
    await ctx.database.create('review_d_b', { aId: a.id })
    ctx.model.extend('review_d_a', { note: 'string' })
    const outcome = await Promise.resolve().then(() => ctx.database.join(['review_d_a', 'review_d_b'], (x: any, y: any) => ({ $eq: [x.id, y.aId] })).execute())
      .then((rows: unknown[]) => `rows ${rows.length}`, (error: any) => `${error?.code ?? ''} ${error?.message ?? error}`)
    expect(outcome).to.equal('rows 1')
  })

  it('(control) the same join and transaction when no preparation runs', async () => {
    const ctx = await boot()
    const a = await ctx.database.create('review_d_a', { name: 'one' })
    await ctx.database.create('review_d_b', { aId: a.id })
    expect(await ctx.database.join(['review_d_a', 'review_d_b'], (x: any, y: any) => ({ $eq: [x.id, y.aId] })).execute()).to.have.length(1)
    await ctx.database.withTransaction(async (database: any) => {
      await database.create('review_d_a', { name: 'two' })
      await database.create('review_d_a', { name: 'three' })
    })
    expect(await ctx.database.get('review_d_a', {})).to.have.length(3)
  })
})
