import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { HOST_THREADPOOL_SIZE, threadpoolFinding } from '@taskward/host'

/*
 * The doctor (npm run doctor, /health?verbose) on libuv's threadpool: every file-system call of the
 * host waits for one of its threads, and libuv's default of 4 made file tool calls wait ~1 s at 500
 * sessions. npm start sets the size; the doctor says when a host runs without it.
 */
describe('host: the file-system threads the doctor looks for', () => {
  it('is OK with npm start\'s size or more, and says the size', () => {
    expect(threadpoolFinding(String(HOST_THREADPOOL_SIZE))).to.deep.equal({ check: 'file-system threads', verdict: 'ok', detail: `${HOST_THREADPOOL_SIZE} (UV_THREADPOOL_SIZE)` })
    expect(threadpoolFinding('64')).to.include({ verdict: 'ok' })
    // libuv caps the pool at 1024.
    expect(threadpoolFinding('5000').detail).to.equal('1024 (UV_THREADPOOL_SIZE)')
  })

  it('warns on libuv\'s default (unset, empty) or a small or malformed size, saying what to set', () => {
    for (const value of [undefined, '', '  ', '4', '2', 'sixteen', '0', '-3', '7.5']) {
      const finding = threadpoolFinding(value)
      expect(finding.verdict, String(value)).to.equal('warn')
      expect(finding.detail, String(value)).to.include(`UV_THREADPOOL_SIZE=${HOST_THREADPOOL_SIZE}`)
    }
    expect(threadpoolFinding(undefined).detail).to.match(/^libuv's default of 4/)
    expect(threadpoolFinding('sixteen').detail).to.include('not a positive whole number')
  })

  it('npm start gives the host that size (scripts/start.mjs holds the same number)', () => {
    const start = readFileSync(new URL('../../../scripts/start.mjs', import.meta.url), 'utf8')
    expect(start).to.include(`if (!env.UV_THREADPOOL_SIZE) env.UV_THREADPOOL_SIZE = '${HOST_THREADPOOL_SIZE}'`)
  })
})
