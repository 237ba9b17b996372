import { expect } from 'chai'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { HOST_THREADPOOL_SIZE, libuvThreadpoolSize, threadpoolFinding } from '@taskward/host'

/*
 * The doctor (npm run doctor, /health?verbose) on libuv's threadpool: every file-system call of the
 * host waits for one of its threads, and libuv's default of 4 made file tool calls wait ~1 s at 500
 * sessions. npm start sets the size; the doctor says when a host runs without it, and how many
 * threads libuv really started.
 */
describe('host: the file-system threads the doctor looks for', () => {
  it('is OK with npm start\'s size or more, and says the size', () => {
    expect(threadpoolFinding(String(HOST_THREADPOOL_SIZE))).to.deep.equal({ check: 'file-system threads', verdict: 'ok', detail: `${HOST_THREADPOOL_SIZE} (UV_THREADPOOL_SIZE)` })
    expect(threadpoolFinding('64')).to.include({ verdict: 'ok' })
    // libuv caps the pool at 1024.
    expect(threadpoolFinding('5000').detail).to.equal('1024 (UV_THREADPOOL_SIZE) (libuv reads UV_THREADPOOL_SIZE="5000" as 1024)')
  })

  it('warns on libuv\'s default or a small size, naming the size libuv starts and what to set', () => {
    expect(threadpoolFinding(undefined).detail).to.match(/^libuv's default of 4: /)
    for (const [value, size] of [['4', 4], ['2', 2], ['', 1], ['  ', 1], ['sixteen', 1], ['0', 1], ['7.5', 7], ['1e1', 1]] as const) {
      const finding = threadpoolFinding(value)
      expect(finding.verdict, value).to.equal('warn')
      expect(finding.detail, value).to.match(new RegExp(`^${size}[ :]`))
      expect(finding.detail, value).to.include(`UV_THREADPOOL_SIZE=${HOST_THREADPOOL_SIZE}`)
    }
    expect(threadpoolFinding('sixteen').detail).to.include('libuv reads UV_THREADPOOL_SIZE="sixteen" as 1')
  })

  it('reads a value as libuv does: the threads a Node process really starts (Linux: /proc/self/task)', function () {
    if (process.platform !== 'linux') this.skip()
    // The threads of a process whose pool has started, against a pool of 1: the pool's own share.
    const threads = (value: string | undefined) => {
      const env = { ...process.env }
      if (value === undefined) delete env.UV_THREADPOOL_SIZE
      else env.UV_THREADPOOL_SIZE = value
      const script = 'require("fs").stat("/", () => setTimeout(() => console.log(require("fs").readdirSync("/proc/self/task").length), 100))'
      return Number(execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' }).trim())
    }
    const others = threads('1') - 1
    for (const value of [undefined, '', '0', 'sixteen', '-3', '1e1', '7.5', '16']) {
      expect(libuvThreadpoolSize(value), String(value)).to.equal(threads(value) - others)
    }
  })

  it('npm start gives the host that size (scripts/start.mjs holds the same number), and so does npm run dsh', () => {
    const start = readFileSync(new URL('../../../scripts/start.mjs', import.meta.url), 'utf8')
    expect(start).to.include(`if (!env.UV_THREADPOOL_SIZE) env.UV_THREADPOOL_SIZE = '${HOST_THREADPOOL_SIZE}'`)
    const dsh = readFileSync(new URL('../../../scripts/dsh/run.mjs', import.meta.url), 'utf8')
    expect(dsh).to.include(`UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE || '${HOST_THREADPOOL_SIZE}'`)
  })
})
