import { expect } from 'chai'
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import init from '@minatojs/sql.js'
import { tempWorkspace, removeTree } from '@taskward/testkit'

const CHILD = fileURLToPath(new URL('./step-commit.child.ts', import.meta.url))
const require = createRequire(import.meta.url)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** What one step of the child writes, in order (the first step starts with the turn's `user/message`). */
const STEP = ['model/usage', 'tool/call', 'test/record', 'tool/result', 'tool/call', 'test/record', 'tool/result']

function run(dataDir: string, pauseMs: number, mode = '') {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', CHILD, dataDir, String(pauseMs), mode], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TASKWARD_LOG_LEVEL: 'error' },
  })
  let output = ''
  child.stdout!.on('data', (chunk) => output += chunk)
  child.stderr!.on('data', (chunk) => output += chunk)
  const exited = new Promise((resolve) => child.on('exit', resolve))
  return {
    child, exited,
    get output() { return output },
    acked: () => Math.max(-1, ...[...output.matchAll(/^acked (\d+)$/gm)].map((match) => Number(match[1]))),
    async waitFor(pattern: RegExp, count = 1) {
      for (let i = 0; i < 1200; i++) {
        if ([...output.matchAll(new RegExp(pattern.source, 'gm'))].length >= count) return
        await sleep(25)
      }
      throw new Error(`no ${count}× ${pattern} from the child; output:\n${output}`)
    },
  }
}

/** The session's events as the file holds them after the crash (the WAL replayed), through the host's engine. */
async function logOf(file: string) {
  const sqlite = await init({ locateFile: (name: string) => require.resolve('@minatojs/sql.js/dist/' + name) })
  const db = new sqlite.Database(file)
  try {
    const integrity = db.exec('PRAGMA integrity_check')[0].values.map((row) => String(row[0])).join('; ')
    const rows = db.exec('SELECT seq, type FROM taskward_event ORDER BY sessionId, seq')[0]?.values ?? []
    return { integrity, seqs: rows.map((row) => Number(row[0])), types: rows.map((row) => String(row[1])) }
  } finally {
    db.close()
  }
}

describe('host: a model step is one commit (SIGKILL at any point of a step)', function () {
  this.timeout(240_000)

  // Kill points: inside the first and the second tool call of a step (the step half recorded), and at
  // arbitrary moments of a fast-running loop (no pause: wherever the kill lands).
  const points = [
    { what: 'inside the first tool call of a step', pauseMs: 200, inTool: 1 },
    { what: 'inside the second tool call of a step', pauseMs: 200, inTool: 2 },
    { what: 'inside a tool call several steps in', pauseMs: 100, inTool: 9 },
    ...[40, 90, 170, 260].map((delay) => ({ what: `${delay} ms into a running loop`, pauseMs: 0, inTool: 1, delay })),
  ]
  for (const point of points) {
    it(`keeps every acknowledged step and never half a step: killed ${point.what}`, async () => {
      const dataDir = await tempWorkspace({}, 'taskward-step-crash-')
      const host = run(dataDir, point.pauseMs)
      try {
        await host.waitFor(/^in-tool \d+$/, point.inTool)
        if ('delay' in point) await sleep(point.delay!)
        host.child.kill('SIGKILL')
        await host.exited
        const log = await logOf(`${dataDir}/taskward.db`)
        expect(log.integrity).to.equal('ok')
        // Every acknowledged event is there, in seq order without a hole.
        expect(log.seqs.length).to.be.greaterThan(host.acked())
        expect(log.seqs).to.deep.equal(log.seqs.map((_, i) => i))
        // Whole steps only: nothing, or the turn's message and whole steps.
        if (!log.types.length) return
        expect(log.types[0]).to.equal('user/message')
        const steps = log.types.slice(1)
        expect(steps.length % STEP.length, `a partial step: ${steps.slice(-STEP.length).join(', ')}`).to.equal(0)
        expect(steps).to.deep.equal(steps.map((_, i) => STEP[i % STEP.length]))
      } finally {
        host.child.kill('SIGKILL')
        await removeTree(dataDir)
      }
    })
  }

  it('records a tool call durably before the tool changes anything outside the log: killed right after a tool wrote a file', async () => {
    const dataDir = await tempWorkspace({}, 'taskward-step-crash-')
    const host = run(dataDir, 0, 'effect')
    try {
      await host.exited
      expect(readFileSync(join(dataDir, 'touched.txt'), 'utf8')).to.equal('step 1\n')
      const log = await logOf(`${dataDir}/taskward.db`)
      expect(log.integrity).to.equal('ok')
      expect(log.seqs).to.deep.equal(log.seqs.map((_, i) => i))
      // The file is there, so is its call: the first step whole, then the second up to the touch.
      expect(log.types).to.deep.equal(['user/message', ...STEP, ...STEP, 'tool/call'])
    } finally {
      host.child.kill('SIGKILL')
      await removeTree(dataDir)
    }
  })
})
