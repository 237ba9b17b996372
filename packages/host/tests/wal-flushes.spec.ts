import { expect } from 'chai'
import { diagnose, walFlushFinding, SLOW_FLUSH_P99_MS, storeDriver } from '@taskward/host'
import { TestHost } from '@taskward/testkit'

/*
 * The doctor on the embedded store's WAL flushes: an agent's turn that starts after a review, an
 * approval or a text answer waits for one or two of them, so flushes slow at the p99 set the host's
 * tail (at 500 paced sessions on the 2-core VM, 22-105 ms between runs). /health?verbose says so with
 * the figures, and what to look at.
 */
describe('host: the WAL flushes the doctor reports', () => {
  const times = (count: number, ms: (i: number) => number) => Array.from({ length: count }, (_, i) => ms(i))

  it('says nothing for a store that does not flush (durability os, or no SQLite)', () => {
    expect(walFlushFinding('os', [])).to.equal(undefined)
    expect(walFlushFinding(undefined, undefined)).to.equal(undefined)
    expect(walFlushFinding('fsync', undefined)).to.equal(undefined)
  })

  it('is OK with too few flushes to judge, and with a p99 within the budget, giving the figures', () => {
    // Below 100 flushes a p99 would be the max: one slow flush just after the start says nothing yet.
    expect(walFlushFinding('fsync', times(99, () => 900))).to.deep.equal({ check: 'WAL flushes', verdict: 'ok', detail: '99 flushes of the WAL so far: too few to judge' })
    // 200 flushes: 197 of 2 ms, two of 40 ms (the p99: the 199th) and one of 300 ms (the max).
    const quick = walFlushFinding('fsync', [...times(197, () => 2), 40, 40, 300])
    expect(quick).to.deep.equal({ check: 'WAL flushes', verdict: 'ok', detail: 'p50 2.0 ms, p99 40.0 ms, max 300.0 ms over the latest 200 flushes, each from its fdatasync\'s call to its answer' })
  })

  it('warns when the p99 passes the budget, saying what it costs and what to do', () => {
    const slow = walFlushFinding('fsync', [...times(197, () => 2), SLOW_FLUSH_P99_MS + 1, SLOW_FLUSH_P99_MS + 1, 400])!
    expect(slow.verdict).to.equal('warn')
    expect(slow.detail).to.match(/^p50 2\.0 ms, p99 51\.0 ms, max 400\.0 ms over the latest 200 flushes, each from its fdatasync's call to its answer: /)
    expect(slow.detail).to.include('libuv\'s pool')
    // At the budget itself: OK.
    expect(walFlushFinding('fsync', [...times(197, () => 2), SLOW_FLUSH_P99_MS, SLOW_FLUSH_P99_MS, 400])!.verdict).to.equal('ok')
    expect(slow.detail).to.include('wait for one or two of these')
    // A turn's start waits for no flush (a model request is not an effect): the warning does not say it does.
    expect(slow.detail).to.not.match(/turn/)
    expect(slow.detail).to.include('durability os')
  })

  describe('on a running host', function () {
    this.timeout(30_000)
    let host: TestHost
    before(async () => { host = await TestHost.boot() })
    after(() => host?.dispose())

    it('/health?verbose\'s findings carry the waits of the latest real flushes of its WAL', async () => {
      const session = await host.ctx.sessions.create({ cwd: process.cwd() })
      // Each commit waits for its own flush when nothing else is writing.
      for (let i = 0; i < 120; i++) await session.append('user/message', { text: `note ${i}`, origin: 'user' }, { commit: true })
      const recent: number[] = storeDriver(host.ctx).recentFlushMs()
      expect(recent.length).to.be.within(120, 512)
      // Real fsyncs take time: never all zeros (what a Flusher that records nothing would give).
      expect(recent.every((ms) => Number.isFinite(ms) && ms >= 0) && recent.some((ms) => ms > 0)).to.equal(true)
      const finding = (await diagnose(host.ctx)).find((f) => f.check === 'WAL flushes')
      expect(finding?.verdict).to.be.oneOf(['ok', 'warn'])
      expect(finding?.detail).to.match(new RegExp(`over the latest ${recent.length} flushes`))
    })
  })
})
