import { expect } from 'chai'
import { execFile, spawnSync } from 'node:child_process'
import { getEventListeners } from 'node:events'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { assertNodeRunnableBy, NOBODY, removeTree, tempWorkspace } from '@taskward/testkit'
import { findOnPath, prepareArea, programExists, removeArea, runCheck } from '../src'
import { isExecutable, launch, launcherPid, stopLauncher } from '../src/launcher'
import { alive, bootRecovery, readyTask, recoveryRecords } from './fixtures'

async function until(condition: () => Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms
  while (!(await condition())) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const childProcess = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process')

/** The listener-leak warnings Node emits while `body` runs (emitted on the tick after the leak). */
async function leakWarnings(body: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = []
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`)
  process.on('warning', onWarning)
  try {
    await body()
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.off('warning', onWarning)
  }
  return warnings.filter((warning) => /MaxListeners|memory leak/.test(warning))
}

describe('recovery: the check launcher (checks start off the event loop)', () => {
  const cleanup: string[] = []
  afterEach(async () => {
    for (const dir of cleanup.splice(0)) await removeTree(dir)
  })

  it('makes and removes a check\'s copy in the launcher: none of its file-system round trips wait for the host\'s event loop', async () => {
    const cwd = await tempWorkspace({ 'answer.txt': 'right', 'src/deep/file.txt': 'x', '.git/HEAD': 'ref: refs/heads/main\n' })
    cleanup.push(cwd)
    const fsPromises = createRequire(import.meta.url)('node:fs/promises') as typeof import('node:fs/promises')
    const [cp, rmOriginal] = [fsPromises.cp, fsPromises.rm]
    let hostCalls = 0
    ;(fsPromises as any).cp = function (...args: unknown[]) {
      hostCalls++
      return (cp as any).apply(this, args)
    }
    ;(fsPromises as any).rm = function (...args: unknown[]) {
      hostCalls++
      return (rmOriginal as any).apply(this, args)
    }
    syncBuiltinESMExports()
    let area: Awaited<ReturnType<typeof prepareArea>> | undefined
    try {
      area = await prepareArea(cwd, false)
      expect(await readFile(join(area.work, 'src/deep/file.txt'), 'utf8')).to.equal('x')
      expect(await readFile(join(area.work, '.git/HEAD'), 'utf8').catch(() => 'absent')).to.equal('absent')
      await removeArea(area)
      expect(await readFile(join(area.work, 'answer.txt'), 'utf8').catch(() => 'gone')).to.equal('gone')
      expect(hostCalls).to.equal(0)
    } finally {
      ;(fsPromises as any).cp = cp
      ;(fsPromises as any).rm = rmOriginal
      syncBuiltinESMExports()
      if (area) await rm(area.root, { recursive: true, force: true })
    }
    // A copy that cannot be made is the file system's error, not the launcher's failure.
    const missing = await prepareArea(join(cwd, 'no-such-dir'), false).then(() => undefined, (error) => error)
    expect(missing?.message).to.match(/ENOENT/)
    expect(missing?.code).to.equal(undefined)
  })

  it('copies the directory a workspace path that is a symlink names, never the link (a check must not run in the workspace itself)', async () => {
    const cwd = await tempWorkspace({ 'answer.txt': 'right', '.git/HEAD': 'ref: refs/heads/main\n' })
    const links = await mkdtemp(join(tmpdir(), 'taskward-links-'))
    cleanup.push(cwd, links)
    const link = join(links, 'workspace')
    await symlink(cwd, link)
    const area = await prepareArea(link, false)
    try {
      expect((await lstat(area.work)).isDirectory()).to.equal(true)
      expect(await readFile(join(area.work, 'answer.txt'), 'utf8')).to.equal('right')
      expect(await readFile(join(area.work, '.git/HEAD'), 'utf8').catch(() => 'absent')).to.equal('absent')
      await writeFile(join(area.work, 'answer.txt'), 'written by a check')
      expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('right')
    } finally {
      await removeArea(area)
    }
    expect(await readFile(join(cwd, 'answer.txt'), 'utf8')).to.equal('right')
  })

  it('never hangs copying a workspace where a process keeps swapping a FIFO in for a file (an open of a FIFO waits for a writer for ever)', async function () {
    this.timeout(60_000)
    const files: Record<string, string> = {}
    for (let i = 0; i < 40; i++) files[`f${i}.txt`] = `${i}\n`
    const cwd = await tempWorkspace(files)
    const side = await mkdtemp(join(tmpdir(), 'taskward-swap-'))
    cleanup.push(cwd, side)
    for (let i = 0; i < 12; i++) spawnSync('mkfifo', [join(side, `p${i}`)])
    // What an agent can leave running: t<i> is a regular file, then for an instant a FIFO, again and again.
    const swapper = childProcess.spawn(process.execPath, ['-e', `
      const { renameSync, writeFileSync } = require('node:fs')
      const { join } = require('node:path')
      const [cwd, side] = process.argv.slice(1)
      const pause = new Int32Array(new SharedArrayBuffer(4))
      for (;;) {
        for (let i = 0; i < 12; i++) {
          renameSync(join(side, 'p' + i), join(cwd, 't' + i))
          renameSync(join(cwd, 't' + i), join(side, 'p' + i))
          writeFileSync(join(side, 'r' + i), 'x')
          renameSync(join(side, 'r' + i), join(cwd, 't' + i))
        }
        Atomics.wait(pause, 0, 0, 2)
      }`, cwd, side], { stdio: 'ignore' })
    const outcomes: Record<string, number> = {}
    try {
      const end = Date.now() + 15_000
      for (let copies = 0; copies < 250 && Date.now() < end; copies++) {
        const copy = prepareArea(cwd, false).then(async (area) => { await removeArea(area); return 'made' }, (error) => /FIFO|no longer a regular file/.test(error.message) ? 'refused' : 'vanished')
        const outcome = await Promise.race([copy, new Promise<string>((resolve) => setTimeout(() => resolve('hung'), 5000))])
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
        if (outcome === 'hung') break
      }
    } finally {
      swapper.kill('SIGKILL')
      // A hung copy holds one of the launcher's threads for ever: only its end frees it.
      if (outcomes.hung) await stopLauncher()
    }
    expect(outcomes.hung ?? 0, JSON.stringify(outcomes)).to.equal(0)
    expect(outcomes.made, JSON.stringify(outcomes)).to.be.greaterThan(0)
  })

  it('never copies a directory outside the workspace that a process swaps in, as a symlink, for one of its directories (the data directory)', async function () {
    this.timeout(60_000)
    const files: Record<string, string> = {}
    for (let i = 0; i < 30; i++) files[`d/f${i}.txt`] = `workspace ${i}\n`
    const cwd = await tempWorkspace(files)
    // Outside the workspace and excluded from every copy, as the data directory is: the same names.
    const data = await mkdtemp(join(tmpdir(), 'taskward-data-'))
    const side = await mkdtemp(join(tmpdir(), 'taskward-swap-'))
    cleanup.push(cwd, data, side)
    for (let i = 0; i < 30; i++) await writeFile(join(data, `f${i}.txt`), 'SECRET-TOKEN\n')
    await symlink(data, join(side, 'link'))
    // What an agent can leave running: d is the workspace's directory, then for an instant a symlink to the data directory.
    const swapper = childProcess.spawn(process.execPath, ['-e', `
      const { renameSync } = require('node:fs')
      const { join } = require('node:path')
      const [cwd, side] = process.argv.slice(1)
      const pause = new Int32Array(new SharedArrayBuffer(4))
      for (;;) {
        renameSync(join(cwd, 'd'), join(side, 'd'))
        renameSync(join(side, 'link'), join(cwd, 'd'))
        Atomics.wait(pause, 0, 0, 1)
        renameSync(join(cwd, 'd'), join(side, 'link'))
        renameSync(join(side, 'd'), join(cwd, 'd'))
        Atomics.wait(pause, 0, 0, 1)
      }`, cwd, side], { stdio: 'ignore' })
    const outcomes: Record<string, number> = {}
    try {
      const end = Date.now() + 8_000
      for (let copies = 0; copies < 300 && Date.now() < end; copies++) {
        const outcome = await prepareArea(cwd, false, [data]).then(async (area) => {
          try {
            // A symlink copied as the link is no leak (a check reads through it what the sandbox lets it read).
            // Absent: d was being renamed when the workspace was listed.
            if (!(await lstat(join(area.work, 'd')).catch(() => undefined))?.isDirectory()) return 'made'
            const seen = await readdir(join(area.work, 'd'))
            for (const name of seen) {
              const path = join(area.work, 'd', name)
              if ((await lstat(path)).isFile() && (await readFile(path, 'utf8')).includes('SECRET')) return 'leaked'
            }
            return 'made'
          } finally {
            await chmod(join(area.work, 'd'), 0o700).catch(() => {})
            await removeArea(area)
          }
        }, () => 'failed')
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
        if (outcome === 'leaked') break
      }
    } finally {
      swapper.kill('SIGKILL')
    }
    expect(outcomes.leaked ?? 0, JSON.stringify(outcomes)).to.equal(0)
    expect(outcomes.made, JSON.stringify(outcomes)).to.be.greaterThan(0)
  })

  it('copies directories, files and symbolic links with their modes, and refuses a FIFO (any special file) by name', async () => {
    const cwd = await tempWorkspace({ 'bin/run.sh': 'exit 0\n', 'ro/inside.txt': 'x', 'data.txt': 'd' })
    cleanup.push(cwd)
    await chmod(join(cwd, 'bin/run.sh'), 0o755)
    await chmod(join(cwd, 'ro'), 0o555)
    await symlink('../data.txt', join(cwd, 'bin/link'))
    await symlink('/nonexistent/target', join(cwd, 'dangling'))
    const area = await prepareArea(cwd, false)
    try {
      expect((await lstat(join(area.work, 'bin/run.sh'))).mode & 0o7777).to.equal(0o755)
      expect((await lstat(join(area.work, 'ro'))).mode & 0o7777).to.equal(0o555)
      expect(await readFile(join(area.work, 'ro/inside.txt'), 'utf8')).to.equal('x')
      expect(await readlink(join(area.work, 'bin/link'))).to.equal('../data.txt')
      expect(await readlink(join(area.work, 'dangling'))).to.equal('/nonexistent/target')
    } finally {
      await chmod(join(area.work, 'ro'), 0o755).catch(() => {})
      await removeArea(area)
    }
    await chmod(join(cwd, 'ro'), 0o755)
    spawnSync('mkfifo', [join(cwd, 'ro/pipe')])
    const refused = await prepareArea(cwd, false).then(() => 'made', (error) => error.message)
    expect(refused).to.match(/pipe/).and.to.match(/FIFO/)
  })

  it('removes a failed copy that holds a filled read-only directory, and reports why the copy failed (a host that is not root)', async function () {
    this.timeout(20_000)
    // Root removes a read-only directory's files; another user cannot: the launcher itself runs as one.
    if (typeof process.getuid !== 'function' || process.getuid() !== 0) this.skip()
    const nobody = NOBODY
    assertNodeRunnableBy(nobody)
    const cwd = await tempWorkspace({ 'a/inside.txt': 'x' })
    const base = await mkdtemp(join(tmpdir(), 'taskward-base-'))
    cleanup.push(cwd, base)
    spawnSync('mkfifo', [join(cwd, 'b-pipe')])
    await chmod(join(cwd, 'a'), 0o555)
    for (const path of [cwd, join(cwd, 'a'), join(cwd, 'a/inside.txt'), join(cwd, 'b-pipe'), base]) spawnSync('chown', [`${nobody}:${nobody}`, path])
    const { LAUNCHER_SOURCE } = await import('../src/launcher-program')
    const launcher = childProcess.spawn(process.execPath, ['-e', LAUNCHER_SOURCE], {
      env: {}, uid: nobody, gid: nobody, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'advanced',
    })
    let failed: string | undefined
    try {
      failed = await new Promise<string>((resolve, reject) => {
        launcher.on('message', (message: { kind: string, message?: string }) => {
          if (message.kind === 'failed') resolve(message.message!)
          else if (message.kind === 'done') reject(new Error('the copy was made'))
        })
        launcher.on('exit', () => reject(new Error('the launcher exited')))
        launcher.send({ id: 1, kind: 'prepare', request: { cwd, base, keepGit: false } })
      })
    } finally {
      launcher.kill('SIGKILL')
    }
    expect(failed).to.match(/FIFO/)
    expect(await readdir(base)).to.deep.equal([])
  })

  it('refuses to copy a workspace into itself (a temp directory inside the workspace) and leaves nothing behind', async function () {
    this.timeout(20_000)
    const cwd = await tempWorkspace({ 'answer.txt': 'right', 'src/a.txt': 'a' })
    cleanup.push(cwd)
    const base = join(cwd, 'tmp')
    await mkdir(base)
    const previous = process.env.TMPDIR
    process.env.TMPDIR = base
    try {
      const refused = await Promise.race([
        prepareArea(cwd, false).then(async (area) => { await removeArea(area); return 'made' }, (error) => error.message),
        new Promise<string>((resolve) => setTimeout(() => resolve('still copying'), 10_000)),
      ])
      expect(refused).to.match(/inside/).and.include('TMPDIR')
      expect(await readdir(base)).to.deep.equal([])
    } finally {
      if (previous === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = previous
    }
  })

  it('removes a copy the check left unremovable (a directory chmod 000 with files in it), as a user without root\'s override', async function () {
    // Root removes anything whatever its mode: run it as nobody when the suite runs as root.
    const as = process.getuid?.() === 0 ? NOBODY : undefined
    const root = join(import.meta.dirname, '../../..')
    if (as !== undefined) {
      assertNodeRunnableBy(as)
      const probe = spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(join(root, 'node_modules', 'tsx', 'package.json'))})`], { cwd: '/', uid: as, gid: as, stdio: 'ignore' })
      // A checkout only root can enter cannot be run as another user.
      if (probe.status !== 0) return this.skip()
    }
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--conditions', 'source', join(import.meta.dirname, 'recovery-unremovable.child.ts')], {
      cwd: root, encoding: 'utf8', timeout: 30_000, env: { ...process.env, HOME: '/tmp' }, ...as !== undefined ? { uid: as, gid: as } : {},
    })
    const line = child.stdout.split('\n').find((text) => text.startsWith('{'))
    expect(line, `${child.stdout}\n${child.stderr}`).to.be.a('string')
    const result = JSON.parse(line!)
    cleanup.push(result.cwd)
    expect(result).to.include({ exitCode: 0, left: null, exists: false })
  })

  it('starts a check from the launcher process, never from the host (a fork copies the page tables of the whole host)', async function () {
    const cwd = await tempWorkspace({ 'answer.txt': 'right' })
    cleanup.push(cwd)
    const bwrap = await findOnPath('bwrap')
    const kinds = bwrap ? ['copy', 'bwrap'] as const : ['copy'] as const
    // The host forks once, for the launcher; after that no check costs it a fork.
    const launcher = await launcherPid()
    expect(launcher).to.be.a('number').and.not.equal(process.pid)
    const original = childProcess.spawn
    let hostSpawns = 0
    ;(childProcess as any).spawn = function (...args: unknown[]) {
      hostSpawns++
      return (original as any).apply(this, args)
    }
    syncBuiltinESMExports()
    try {
      for (const sandbox of kinds) {
        const area = await prepareArea(cwd, false)
        try {
          const run = await runCheck({ id: 'answer', argv: ['sh', '-c', 'cat answer.txt; echo " to stderr" >&2; exit 3'], timeoutMs: 10_000 }, area, { sandbox, outputLimitBytes: 4096 })
          expect(run, sandbox).to.include({ exitCode: 3, signal: null })
          expect(run.output, sandbox).to.include('right').and.include('to stderr')
        } finally {
          await removeArea(area)
        }
      }
      // And the check's parent is the launcher, not the host.
      const area = await prepareArea(cwd, false)
      try {
        const run = await runCheck({ id: 'parent', argv: ['sh', '-c', 'echo $PPID'], timeoutMs: 10_000 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
        expect(Number(run.output.trim())).to.equal(launcher)
      } finally {
        await removeArea(area)
      }
    } finally {
      ;(childProcess as any).spawn = original
      syncBuiltinESMExports()
    }
    expect(hostSpawns).to.equal(0)
  })

  it('gives the launcher none of the host\'s environment (a loader in NODE_OPTIONS, secrets)', async () => {
    const pid = await launcherPid()
    const names = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean).map((entry) => entry.split('=')[0])
    // Only what node itself sets up for the IPC channel.
    expect(names.filter((name) => !name.startsWith('NODE_CHANNEL_'))).to.deep.equal([])
    expect(process.env.PATH).to.be.a('string')
  })

  it('looks programs up afresh every time: a program added, replaced by a non-executable or shadowed earlier on PATH is seen at once', async () => {
    const first = await mkdtemp(join(tmpdir(), 'taskward-path-a-'))
    const second = await mkdtemp(join(tmpdir(), 'taskward-path-b-'))
    cleanup.push(first, second)
    const path = [first, second].join(delimiter)
    const program = 'taskward-probe-tool'
    expect(await findOnPath(program, path)).to.equal(undefined)
    await writeFile(join(second, program), '#!/bin/sh\nexit 0\n')
    await chmod(join(second, program), 0o755)
    expect(await findOnPath(program, path)).to.equal(join(second, program))
    expect(await programExists(program, first, path)).to.equal(true)
    // An attacker's copy placed earlier on PATH wins as it would for spawn itself: never a stale answer.
    await writeFile(join(first, program), '#!/bin/sh\nexit 1\n')
    await chmod(join(first, program), 0o755)
    expect(await findOnPath(program, path)).to.equal(join(first, program))
    await chmod(join(first, program), 0o644)
    expect(await findOnPath(program, path)).to.equal(join(second, program))
    await rm(join(second, program))
    expect(await findOnPath(program, path)).to.equal(undefined)
    expect(await programExists(program, first, path)).to.equal(false)
    // A path with a slash is taken relative to the check's working directory, not looked up.
    expect(await programExists(`./${program}`, first, path)).to.equal(false)
    await chmod(join(first, program), 0o755)
    expect(await programExists(`./${program}`, first, path)).to.equal(true)
  })

  it('reports a program that cannot start with its errno code, and an output limit still holds', async () => {
    const cwd = await tempWorkspace({ 'README.md': '# x\n' })
    cleanup.push(cwd)
    const area = await prepareArea(cwd, false)
    try {
      const missing = await runCheck({ id: 'missing', argv: ['taskward-no-such-program'], timeoutMs: 10_000 }, area, { sandbox: 'copy', outputLimitBytes: 1024 })
      expect(missing).to.include({ runnerError: 'not-runnable' })
      expect(missing.output).to.match(/^ENOENT: cannot start/)
      const loud = await runCheck({ id: 'loud', argv: ['sh', '-c', 'head -c 200000 /dev/zero | tr "\\0" x'], timeoutMs: 10_000 }, area, { sandbox: 'copy', outputLimitBytes: 1024 })
      expect(loud).to.include({ exitCode: 0 })
      expect(loud.output.length).to.be.lessThan(1200)
      expect(loud.output).to.include('bytes of output omitted')
    } finally {
      await removeArea(area)
    }
  })

  it('holds a flooding check\'s output bounded while the event loop is busy (the launcher holds back what the host has not taken)', async () => {
    const cwd = await tempWorkspace({ 'README.md': '# x\n' })
    cleanup.push(cwd)
    const area = await prepareArea(cwd, false)
    try {
      const running = runCheck({ id: 'flood', argv: ['cat', '/dev/zero'], timeoutMs: 2500 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
      await new Promise((resolve) => setTimeout(resolve, 300))
      const before = process.memoryUsage().rss
      // A busy event loop (a long fold, a GC pause): the launcher must not keep posting what nobody takes.
      const end = Date.now() + 1000
      while (Date.now() < end) {}
      const grown = process.memoryUsage().rss - before
      const run = await running
      expect(run).to.include({ timedOut: true })
      expect(run.output).to.include('bytes of output omitted')
      expect(grown, `host memory grew ${Math.round(grown / 1e6)} MB in one second`).to.be.lessThan(64 * 1024 * 1024)
    } finally {
      await removeArea(area)
    }
  })

  it('passes the host no more of a flooding check\'s output than it keeps (a flood costs the host\'s event loop nothing per byte)', async () => {
    // What the host is handed, as the launcher's messages deliver it (BoundedOutput keeps `limit` of it).
    let pushedBytes = 0
    let pushes = 0
    let skips = 0
    const limit = 4096
    const outcome = await launch({ file: 'cat', args: ['/dev/zero'], cwd: tmpdir(), env: { PATH: process.env.PATH! }, timeoutMs: 1500, graceMs: 200, outputLimitBytes: limit },
      { push: (chunk) => { pushes++; pushedBytes += chunk.length }, skip: () => { skips++ } })
    expect(outcome).to.include({ timedOut: true })
    // Hundreds of MB were written; the host took its head and its tail, and one count of what lay between.
    const chunk = 64 * 1024
    expect(pushedBytes, `${pushes} chunks, ${skips} skip counts`).to.be.at.most(2 * (limit + chunk))
    expect(skips).to.equal(1)
  })

  it('keeps a loud check\'s tail when the event loop was busy as it ended (nothing is cut off behind a slow host)', async () => {
    const cwd = await tempWorkspace({ 'README.md': '# x\n' })
    cleanup.push(cwd)
    const area = await prepareArea(cwd, false)
    try {
      const running = runCheck({ id: 'loud', argv: ['sh', '-c', 'head -c 400000 /dev/zero | tr "\\0" x; echo; echo TAIL-SUMMARY: 1 failing'], timeoutMs: 20_000 },
        area, { sandbox: 'copy', outputLimitBytes: 4096 })
      // Busy for longer than the output grace while the check writes more than the launcher posts unacknowledged (the rest fits in its pipe) and exits.
      const end = Date.now() + 1000
      while (Date.now() < end) {}
      const run = await running
      expect(run).to.include({ exitCode: 0 })
      expect(run.output).to.include('TAIL-SUMMARY: 1 failing').and.include('bytes of output omitted')
      const omitted = Number(/\[… (\d+) bytes of output omitted …\]/.exec(run.output)![1])
      // Every byte accounted for: 400,000 x, two newlines and the summary line, less what is shown.
      const shown = Buffer.byteLength(run.output.replace(/\n\[… \d+ bytes of output omitted …\]\n/, ''))
      expect(omitted + shown).to.equal(400_000 + 1 + 'TAIL-SUMMARY: 1 failing\n'.length)
    } finally {
      await removeArea(area)
    }
  })

  it('stops a launcher that could not start (stopLauncher never waits for an exit that will not come)', async function () {
    this.timeout(10_000)
    const real = process.execPath
    process.execPath = join(tmpdir(), 'taskward-no-such-node')
    let asked: Promise<string>
    try {
      await stopLauncher()
      asked = isExecutable('/').then(() => 'ran', (error) => error.code)
    } finally {
      process.execPath = real
    }
    // Stopped before its spawn failure was even reported: it ends with the 'error', as no 'exit' follows.
    await stopLauncher()
    expect(await asked).to.equal('INTERNAL')
    expect(await isExecutable('/')).to.equal(true)
  })

  it('kills a run whose owner aborts it, even before the launcher reported its pid, and rejects it ABORTED once it ended', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'taskward-cancel-'))
    cleanup.push(dir)
    const request = { file: 'sh', args: ['-c', 'echo $$ > pid; exec sleep 30'], cwd: dir, env: { PATH: process.env.PATH! }, timeoutMs: 60_000, graceMs: 200, outputLimitBytes: 4096 }
    const sink = { push: () => {}, skip: () => {} }
    const owner = new AbortController()
    const started = Date.now()
    const running = launch(request, sink, owner.signal).then(() => 'resolved', (error) => error.code)
    // At once, synchronously: the host has no pid to kill, only the launcher can.
    owner.abort()
    expect(await running).to.equal('ABORTED')
    expect(Date.now() - started).to.be.lessThan(3000)
    const pid = Number((await readFile(join(dir, 'pid'), 'utf8').catch(() => '')).trim())
    if (pid) expect(await alive(pid)).to.equal(false)
    // An owner already gone starts nothing.
    await rm(join(dir, 'pid'), { force: true })
    expect(await launch(request, sink, owner.signal).then(() => 'resolved', (error) => error.code)).to.equal('ABORTED')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(await readFile(join(dir, 'pid'), 'utf8').catch(() => 'not started')).to.equal('not started')
  })


  it('serves many concurrent runs of one owner without a listener each (no leak warning), and its abort kills them all', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'taskward-owner-'))
    cleanup.push(dir)
    const warnings = await leakWarnings(async () => {
      const owner = new AbortController()
      const sink = { push: () => {}, skip: () => {} }
      const runs = Array.from({ length: 15 }, (_, i) => launch({
        file: 'sh', args: ['-c', `echo $$ > pid-${i}; exec sleep 30`], cwd: dir, env: { PATH: process.env.PATH! }, timeoutMs: 60_000, graceMs: 200, outputLimitBytes: 4096,
      }, sink, owner.signal).then(() => 'resolved', (error) => error.code))
      await until(async () => (await Promise.all(runs.map((_, i) => readFile(join(dir, `pid-${i}`), 'utf8').catch(() => '')))).every(Boolean))
      owner.abort()
      expect(await Promise.all(runs)).to.deep.equal(Array(15).fill('ABORTED'))
      for (let i = 0; i < 15; i++) expect(await alive(Number((await readFile(join(dir, `pid-${i}`), 'utf8')).trim()))).to.equal(false)
    })
    expect(warnings).to.deep.equal([])
  })
  it('leaves no abort listener on its owner\'s signal once the owner\'s runs ended, however often the launcher was replaced (no leak warning)', async function () {
    this.timeout(30_000)
    const dir = await mkdtemp(join(tmpdir(), 'taskward-owner-'))
    cleanup.push(dir)
    const warnings = await leakWarnings(async () => {
      // One signal for the plugin's life; a launcher that dies (a crash, a copy-mode check killing its
      // parent) is replaced, and each new one must not add a listener the old one left behind.
      const owner = new AbortController()
      const sink = { push: () => {}, skip: () => {} }
      const request = { file: 'sh', args: ['-c', 'exit 0'], cwd: dir, env: { PATH: process.env.PATH! }, timeoutMs: 10_000, graceMs: 200, outputLimitBytes: 4096 }
      for (let i = 0; i < 12; i++) {
        expect(await launch(request, sink, owner.signal)).to.deep.include({ exit: { code: 0, signal: null } })
        expect(getEventListeners(owner.signal, 'abort')).to.have.length(0)
        await stopLauncher()
      }
      // A run killed with its launcher lets go of the signal too.
      const dying = launch({ ...request, args: ['-c', 'exec sleep 30'] }, sink, owner.signal).then(() => 'resolved', (error) => error.code)
      expect(getEventListeners(owner.signal, 'abort')).to.have.length(1)
      await new Promise((resolve) => setTimeout(resolve, 100))
      await stopLauncher()
      expect(await dying).to.equal('INTERNAL')
      expect(getEventListeners(owner.signal, 'abort')).to.have.length(0)
      // The owner's abort still kills what it runs now.
      const running = launch({ ...request, args: ['-c', 'echo $$ > pid; exec sleep 30'] }, sink, owner.signal).then(() => 'resolved', (error) => error.code)
      await until(async () => (await readFile(join(dir, 'pid'), 'utf8').catch(() => '')).trim().length > 0)
      owner.abort()
      expect(await running).to.equal('ABORTED')
      expect(await alive(Number((await readFile(join(dir, 'pid'), 'utf8')).trim()))).to.equal(false)
    })
    expect(warnings).to.deep.equal([])
  })

  it('kills a running check\'s process group when the launcher process dies, and refuses the check as a runner fault', async () => {
    const cwd = await tempWorkspace({ 'README.md': '# x\n' })
    cleanup.push(cwd)
    const area = await prepareArea(cwd, false)
    try {
      const running = runCheck({ id: 'long', argv: ['sh', '-c', 'sleep 60 & echo $! > child.pid; wait'], timeoutMs: 120_000 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
      const settled = running.then(() => 'resolved', (error) => error.code)
      const pidFile = join(area.work, 'child.pid')
      await until(async () => (await readFile(pidFile, 'utf8').catch(() => '')).trim().length > 0)
      const child = Number((await readFile(pidFile, 'utf8')).trim())
      expect(await alive(child)).to.equal(true)
      await stopLauncher()
      expect(await settled).to.equal('INTERNAL')
      // Its timeout died with the launcher: left alone, the group would have run for a minute more.
      await until(async () => !(await alive(child)), 5000)
      // The next check starts a new launcher.
      const next = await runCheck({ id: 'again', argv: ['sh', '-c', 'exit 0'], timeoutMs: 10_000 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
      expect(next).to.include({ exitCode: 0 })
    } finally {
      await removeArea(area)
    }
  })

  it('leaves no copy behind when the launcher dies while it makes one (the copy is refused as the launcher\'s fault)', async function () {
    this.timeout(60_000)
    const files: Record<string, string> = {}
    for (let i = 0; i < 3000; i++) files[`d${i % 30}/f${i}.txt`] = `${i}\n`
    const cwd = await tempWorkspace(files)
    const base = await mkdtemp(join(tmpdir(), 'taskward-base-'))
    cleanup.push(cwd, base)
    const previous = process.env.TMPDIR
    process.env.TMPDIR = base
    try {
      const making = prepareArea(cwd, false).then(() => 'made', (error) => error.code)
      // Mid-copy: the area exists and its copy has begun.
      await until(async () => (await readdir(base).catch(() => [] as string[])).some((name) => name.startsWith('taskward-check-'))
        && (await readdir(join(base, (await readdir(base))[0], 'work')).catch(() => [] as string[])).length > 0, 10_000)
      await stopLauncher()
      expect(await making).to.equal('INTERNAL')
      expect(await readdir(base)).to.deep.equal([])
    } finally {
      if (previous === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = previous
    }
  })

  it('refuses an attempt whose copy the launcher died making as an internal error, and records nothing (never an inconclusive round)', async function () {
    this.timeout(60_000)
    const files: Record<string, string> = { 'answer.txt': 'alpha' }
    for (let i = 0; i < 3000; i++) files[`d${i % 30}/f${i}.txt`] = `${i}\n`
    const cwd = await tempWorkspace(files)
    const base = await mkdtemp(join(tmpdir(), 'taskward-base-'))
    cleanup.push(cwd, base)
    // The copy in the temp directory (TMPDIR, watched below), not in memory.
    const host = await bootRecovery({ sandbox: 'copy', memoryCopyBytes: 0 })
    const previous = process.env.TMPDIR
    try {
      const { session, task } = await readyTask(host, cwd, [{ id: 'ok', argv: ['sh', '-c', 'exit 0'], timeoutMs: 20_000 }])
      process.env.TMPDIR = base
      const attempt = host.ctx.recovery.runChecks(session, task.id, { claim: 'progress' }).then(() => 'recorded', (error) => error.code)
      await until(async () => (await readdir(base).catch(() => [] as string[])).some((name) => name.startsWith('taskward-check-'))
        && (await readdir(join(base, (await readdir(base))[0], 'work')).catch(() => [] as string[])).length > 0, 30_000)
      await stopLauncher()
      expect(await attempt).to.equal('INTERNAL')
      expect(await recoveryRecords(session, 'attempt')).to.deep.equal([])
      expect(await readdir(base)).to.deep.equal([])
    } finally {
      if (previous === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = previous
      await host.ctx.recovery.settled()
      await host.dispose()
    }
  })

  it('leaves the launcher to its host on a Ctrl-C at the terminal (SIGINT to the host\'s process group): a host that shuts down gracefully still gets its check', async () => {
    const cwd = await tempWorkspace({ 'README.md': '# x\n' })
    cleanup.push(cwd)
    // Its own process group, as the foreground job of a terminal is.
    const host = childProcess.spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', join(import.meta.dirname, 'recovery-launcher-sigint.child.ts'), cwd],
      { detached: true, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    const lines = new Promise<string[]>((resolve, reject) => {
      host.stdout!.on('data', (chunk) => {
        out += chunk
        if (out.includes('started\n') && !out.includes('SIGINT')) process.kill(-host.pid!, 'SIGINT')
      })
      host.on('close', () => resolve(out.trim().split('\n')))
      host.on('error', reject)
    })
    const [started, interrupted, result] = await lines
    expect([started, interrupted]).to.deep.equal(['started', 'SIGINT'])
    const run = JSON.parse(result)
    expect(run, run.message).to.include({ exitCode: 0 })
    expect(run.output).to.equal('finished\n')
  })

  for (const [how, what] of [['exit', 'exits (nothing is left to time it out)'], ['SIGKILL', 'is SIGKILLed (the launcher sees it gone)']] as const) {
    it(`kills a running check's process group and removes its copy when the host process ${what}`, async () => {
      const cwd = await tempWorkspace({ 'README.md': '# x\n' })
      cleanup.push(cwd)
      const child = join(import.meta.dirname, 'recovery-launcher-exit.child.ts')
      const stdout = await new Promise<string>((resolve, reject) => {
        execFile(process.execPath, ['--import', 'tsx', '--conditions', 'source', child, cwd, how], { timeout: 60_000 },
          (error, out) => error && !(how === 'SIGKILL' && (error as any).signal) ? reject(error) : resolve(out))
      })
      const { pid, area } = JSON.parse(stdout)
      try {
        expect(pid).to.be.greaterThan(0)
        await until(async () => !(await alive(pid)), 5000)
        // Nor is anything left to remove its copy: the launcher removes it before it exits.
        await until(async () => !(await lstat(area.root).then(() => true, () => false)), 5000)
      } finally {
        await removeArea(area)
      }
    })
  }

  it('kills a running check\'s process group when the host is SIGKILLed as the check writes (a write to the dead host fails before the launcher sees the channel close)', async () => {
    const cwd = await tempWorkspace({ 'README.md': '# x\n' })
    cleanup.push(cwd)
    const host = childProcess.spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', join(import.meta.dirname, 'recovery-launcher-exit.child.ts'), cwd, 'chatty'],
      { stdio: ['ignore', 'pipe', 'ignore'] })
    const { pid, area, launcher } = JSON.parse(await new Promise<string>((resolve) => host.stdout!.once('data', (chunk) => resolve(String(chunk)))))
    try {
      // The launcher is busy (or not scheduled) as the host dies: when it runs again, the check's
      // output and the channel's end wait together, and the output comes first.
      process.kill(launcher, 'SIGSTOP')
      host.kill('SIGKILL')
      await new Promise((resolve) => host.once('exit', resolve))
      process.kill(launcher, 'SIGCONT')
      await until(async () => !(await alive(pid)), 5000)
      await until(async () => !(await alive(launcher)), 5000)
      expect(await lstat(area.root).then(() => 'left behind', () => 'removed')).to.equal('removed')
    } finally {
      try { process.kill(launcher, 'SIGCONT') } catch {}
      if (await alive(pid)) process.kill(pid, 'SIGKILL')
      await removeArea(area)
    }
  })
})
