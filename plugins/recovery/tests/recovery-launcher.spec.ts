import { expect } from 'chai'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { removeTree, tempWorkspace } from '@taskward/testkit'
import { findOnPath, prepareArea, programExists, removeArea, runCheck } from '../src'

const childProcess = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process')

describe('recovery: the check launcher (checks start off the event loop)', () => {
  const cleanup: string[] = []
  afterEach(async () => {
    for (const dir of cleanup.splice(0)) await removeTree(dir)
  })

  it('starts a check without the main thread calling spawn (a fork of the whole host blocks its thread until exec)', async function () {
    const cwd = await tempWorkspace({ 'answer.txt': 'right' })
    cleanup.push(cwd)
    const bwrap = await findOnPath('bwrap')
    const kinds = bwrap ? ['copy', 'bwrap'] as const : ['copy'] as const
    const original = childProcess.spawn
    let mainThreadSpawns = 0
    ;(childProcess as any).spawn = function (...args: unknown[]) {
      mainThreadSpawns++
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
    } finally {
      ;(childProcess as any).spawn = original
      syncBuiltinESMExports()
    }
    expect(mainThreadSpawns).to.equal(0)
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
})
