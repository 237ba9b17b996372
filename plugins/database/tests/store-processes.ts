import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import init from '@minatojs/sql.js'

const CHILD = fileURLToPath(new URL('./store-child.ts', import.meta.url))
const require = createRequire(import.meta.url)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface HostProcess {
  child: ChildProcess
  readonly output: string
  readonly acked: number[]
  exited: Promise<{ code: number | null, signal: string | null }>
  waitFor(pattern: RegExp, timeout?: number): Promise<RegExpExecArray>
}

function watch(child: ChildProcess): HostProcess {
  let output = ''
  const acked: number[] = []
  let partial = ''
  child.stdout!.on('data', (chunk) => {
    output += chunk
    partial += chunk
    const lines = partial.split('\n')
    partial = lines.pop()!
    for (const line of lines) {
      const match = /^acked (\d+)$/.exec(line)
      if (match) acked.push(Number(match[1]))
    }
  })
  child.stderr!.on('data', (chunk) => output += chunk)
  const exited = new Promise<{ code: number | null, signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  return {
    child, exited, acked,
    get output() { return output },
    async waitFor(pattern, timeout = 60_000) {
      const deadline = Date.now() + timeout
      let done = false
      exited.then(() => done = true)
      while (true) {
        const match = pattern.exec(output)
        if (match) return match
        if (done || Date.now() > deadline) throw new Error(`no ${pattern} from pid ${child.pid}; output:\n${output}`)
        await sleep(50)
      }
    },
  }
}

/** A real host process (tests/store-child.ts) on `dataDir`. */
export function hostProcess(dataDir: string, sessionId: string, mode: 'append' | 'hold', durability: 'fsync' | 'os' = 'fsync') {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', CHILD, dataDir, sessionId, durability, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TASKWARD_LOG_LEVEL: 'error' },
  })
  return watch(child)
}

/** `npm start` on `dataDir`, as an operator runs it. */
export function npmStart(dataDir: string, port: number) {
  const child = spawn('npm', ['start', '--', '--no-demo', '--data', dataDir, '--port', String(port)], {
    cwd: fileURLToPath(new URL('../../..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  return watch(child)
}

/** `PRAGMA integrity_check` of a closed database file, through the same engine the host uses. */
export async function integrityCheck(file: string) {
  const sqlite = await init({ locateFile: (name: string) => require.resolve('@minatojs/sql.js/dist/' + name) })
  const db = new sqlite.Database(file)
  try {
    return db.exec('PRAGMA integrity_check')[0].values.map((row) => String(row[0])).join('; ')
  } finally {
    db.close()
  }
}
