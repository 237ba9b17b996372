import { expect } from 'chai'
import { TestHost } from '@taskward/testkit'
import { storeHealth } from '@taskward/host'

/*
 * Review of issue 30 point 3 (prepare-guard.ts): a table preparation that fails for a reason that is
 * not an outage — here a UNIQUE constraint the rows already in the table break — must not be reported
 * as STORE_UNAVAILABLE ("make it again once the store answers", /health 503): the store answers
 * fine, and asking again will never help. The brief: a constraint violation must NOT be 503.
 */
describe('database: a table preparation that fails on a constraint (not an outage)', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  afterEach(async () => { await host?.dispose() })

  it('is not classified STORE_UNAVAILABLE, and /health does not say the store is unavailable', async () => {
    host = await TestHost.boot()
    const ctx = host.ctx as any
    ctx.model.extend('review_dup', { id: 'unsigned', name: 'unsigned' }, { autoInc: true })
    await ctx.database.prepared()
    await ctx.database.create('review_dup', { name: 7 })
    await ctx.database.create('review_dup', { name: 7 })
    // A later version of a plugin changes the column's type (a migration: the rows are copied into a
    // new table) and declares it unique: the existing rows break the constraint.
    ctx.model.extend('review_dup', { name: 'string' }, { unique: ['name'] })
    let refusal: any
    try {
      await ctx.database.get('review_dup', {})
    } catch (error) {
      refusal = error
    }
    expect(refusal, 'the preparation failed (precondition of this test)').to.not.equal(undefined)
    expect(refusal.code, refusal.message).to.not.equal('STORE_UNAVAILABLE')
    const health: { ok: boolean, code?: string } = await storeHealth(ctx)
    expect(health.code, JSON.stringify(health)).to.not.equal('STORE_UNAVAILABLE')
  })

  it('refuses only that table, coded STORE_CORRUPT with the store\'s own error, and serves every other table', async () => {
    host = await TestHost.boot()
    const ctx = host.ctx as any
    ctx.model.extend('review_dup', { id: 'unsigned', name: 'unsigned' }, { autoInc: true })
    ctx.model.extend('review_other', { id: 'unsigned', name: 'string' }, { autoInc: true })
    await ctx.database.prepared()
    await ctx.database.create('review_dup', { name: 7 })
    await ctx.database.create('review_dup', { name: 7 })
    ctx.model.extend('review_dup', { name: 'string' }, { unique: ['name'] })
    const refusal = await ctx.database.get('review_dup', {}).then(() => undefined, (error: any) => error)
    expect(refusal?.code).to.equal('STORE_CORRUPT')
    expect(refusal.details).to.include({ table: 'review_dup' })
    expect(refusal.message).to.match(/review_dup/).and.match(/UNIQUE/).and.match(/will not help/)
    // Refused before it runs, every time (no retry of the DDL), and writes too.
    const again = await ctx.database.create('review_dup', { name: 'x' }).then(() => undefined, (error: any) => error)
    expect(again?.code).to.equal('STORE_CORRUPT')
    // Every other table is served.
    await ctx.database.create('review_other', { name: 'fine' })
    expect(await ctx.database.get('review_other', {})).to.have.length(1)
    const health = await storeHealth(ctx)
    expect(health).to.include({ ok: false, code: 'STORE_CORRUPT' })
    expect((health as { error: string }).error).to.match(/review_dup/)
  })
})
