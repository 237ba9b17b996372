import { expect } from 'chai'
import type { Context } from 'cordis'
import Schema from 'schemastery'
import { original, type Session, type ToolResult } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { existsSync } from 'node:fs'
import { readFile, symlink } from 'node:fs/promises'
import { join } from 'node:path'

/** The `tool/call` and `tool/result` events a session recorded for one call id. */
async function recorded(session: Session, callId: string) {
  const events = await session.read({ from: 0, limit: 1000 })
  return {
    call: events.find((e) => e.type === 'tool/call' && e.data.callId === callId),
    result: events.find((e) => e.type === 'tool/result' && e.data.callId === callId),
  }
}

describe('host: tools', () => {
  let host: TestHost
  let cwd: string
  let outside: string
  let session: Session

  beforeEach(async () => {
    host = await TestHost.boot()
    cwd = await tempWorkspace({ 'src/a.ts': 'export const a = 1\n', 'src/b.ts': 'export const b = 2\n// TODO b\n', 'notes.md': 'TODO notes\n' })
    outside = await tempWorkspace({ 'secret.txt': 'outside secret\n' })
    session = await host.ctx.sessions.create({ cwd })
  })
  afterEach(async () => {
    await host.dispose()
    await removeTree(cwd)
    await removeTree(outside)
  })

  describe('admission', () => {
    it('runs no tool body when a guard denies, and records the call and the coded result', async () => {
      const ran: unknown[] = []
      host.ctx.tools.register({ name: 'side_effect', description: 'test', execute: (args) => { ran.push(args) } })
      host.ctx.tools.guard(({ name }) => name === 'side_effect' ? { deny: { code: 'REPAIR_CONFIRMATION_REQUIRED', message: 'confirm first' } } : undefined)
      const outcome = await host.ctx.tools.execute(session, 'side_effect', { x: 1 })
      expect(ran).to.deep.equal([])
      expect(outcome.error).to.deep.equal({ code: 'REPAIR_CONFIRMATION_REQUIRED', message: 'confirm first' })
      expect(outcome).to.not.have.property('result')
      const { call, result } = await recorded(session, outcome.callId)
      expect(call?.data).to.deep.equal({ callId: outcome.callId, name: 'side_effect', args: { x: 1 } })
      expect(result?.data.error.code).to.equal('REPAIR_CONFIRMATION_REQUIRED')
      expect(call!.seq).to.be.lessThan(result!.seq)
    })

    it('lets a guard that throws deny the call as well, with its code', async () => {
      const ran: unknown[] = []
      host.ctx.tools.register({ name: 'side_effect', description: 'test', execute: (args) => { ran.push(args) } })
      host.ctx.tools.guard(async () => { throw new TaskwardError('FORBIDDEN', 'no') })
      const outcome = await host.ctx.tools.execute(session, 'side_effect', {})
      expect(ran).to.deep.equal([])
      expect(outcome.error?.code).to.equal('FORBIDDEN')
    })

    it('runs the body when every guard allows, and records its result', async () => {
      host.ctx.tools.register({ name: 'add', description: 'test', parameters: Schema.object({ a: Schema.number().required(), b: Schema.number().default(10) }), execute: ({ a, b }) => ({ sum: a + b }) })
      const seen: string[] = []
      host.ctx.tools.guard(({ name }) => { seen.push(name) })
      host.ctx.tools.guard(() => ({ allow: true }))
      const outcome = await host.ctx.tools.execute(session, 'add', { a: 1 })
      expect(outcome.result).to.deep.equal({ sum: 11 })
      expect(seen).to.deep.equal(['add'])
      expect((await recorded(session, outcome.callId)).result?.data.result).to.deep.equal({ sum: 11 })
    })

    it('records TOOL_NOT_FOUND for an unknown tool', async () => {
      const outcome = await host.ctx.tools.execute(session, 'no_such_tool', {})
      expect(outcome.error?.code).to.equal('TOOL_NOT_FOUND')
      const { call, result } = await recorded(session, outcome.callId)
      expect(call?.data.name).to.equal('no_such_tool')
      expect(result?.data.error.code).to.equal('TOOL_NOT_FOUND')
    })

    it('records TOOL_INVALID_ARGS for arguments the schema refuses, without running the body', async () => {
      let ran = false
      host.ctx.tools.register({ name: 'typed', description: 'test', parameters: Schema.object({ n: Schema.number().required() }), execute: () => { ran = true } })
      const outcome = await host.ctx.tools.execute(session, 'typed', { n: 'not a number' })
      expect(ran).to.equal(false)
      expect(outcome.error?.code).to.equal('TOOL_INVALID_ARGS')
      expect((await recorded(session, outcome.callId)).result?.data.error.code).to.equal('TOOL_INVALID_ARGS')
      expect((await host.ctx.tools.execute(session, 'typed', {})).error?.code).to.equal('TOOL_INVALID_ARGS')
    })

    it('records TOOL_FAILED for a body that throws an uncoded error', async () => {
      host.ctx.tools.register({ name: 'broken', description: 'test', execute: () => { throw new Error('boom') } })
      const outcome = await host.ctx.tools.execute(session, 'broken', {})
      expect(outcome.error).to.deep.equal({ code: 'TOOL_FAILED', message: 'boom' })
    })

    it('removes a guard and a tool when the plugin that registered them is disposed', async () => {
      const ran: string[] = []
      const owner = host.ctx.plugin({
        name: 'test-tool-owner',
        inject: ['tools'],
        apply(ctx: Context) {
          ctx.tools.register({ name: 'owned', description: 'test', execute: () => { ran.push('owned') } })
          ctx.tools.guard(({ name }) => name === 'read' ? { deny: { code: 'FORBIDDEN', message: 'no reading' } } : undefined)
        },
      })
      expect((await host.ctx.tools.execute(session, 'read', { path: 'notes.md' })).error?.code).to.equal('FORBIDDEN')
      expect((await host.ctx.tools.execute(session, 'owned', {})).error).to.equal(undefined)
      expect(ran).to.deep.equal(['owned'])
      owner.dispose()
      expect(host.ctx.tools.get('owned')).to.equal(undefined)
      expect((await host.ctx.tools.execute(session, 'owned', {})).error?.code).to.equal('TOOL_NOT_FOUND')
      expect((await host.ctx.tools.execute(session, 'read', { path: 'notes.md' })).result).to.deep.equal({ path: 'notes.md', content: 'TODO notes\n' })
      expect(ran).to.deep.equal(['owned'])
    })

    it('held unwrapped (as agents hold it), the registry still sees guards and observers come and go with their plugin', async () => {
      // What agents, recovery and the benchmarks call: the service object itself, read once.
      const registry = original(host.ctx.tools)
      expect(registry).to.not.equal(host.ctx.tools)
      const observed: string[] = []
      const observers = host.ctx.sessions.observerCount()
      const plugin = {
        name: 'test-guard-owner',
        inject: ['tools', 'sessions'],
        apply(ctx: Context) {
          ctx.tools.guard(({ name }) => name === 'read' ? { deny: { code: 'FORBIDDEN', message: 'no reading' } } : undefined)
          ctx.sessions.observe((_, event) => { observed.push(event.type) })
        },
      }
      const read = () => registry.execute(session, 'read', { path: 'notes.md' })
      let owner = host.ctx.plugin(plugin)
      expect((await read()).error?.code).to.equal('FORBIDDEN')
      expect(observed).to.deep.equal(['tool/call', 'tool/result'])
      expect(host.ctx.sessions.observerCount()).to.equal(observers + 1)
      owner.dispose()
      expect(host.ctx.sessions.observerCount()).to.equal(observers)
      expect((await read()).result).to.deep.equal({ path: 'notes.md', content: 'TODO notes\n' })
      expect(observed).to.have.length(2)
      // Loaded again: the same registry object guards again, and the new observer sees the appends.
      owner = host.ctx.plugin(plugin)
      expect((await read()).error?.code).to.equal('FORBIDDEN')
      expect(observed).to.have.length(4)
      owner.dispose()
    })
  })

  describe('file tools', () => {
    const run = (name: string, args: unknown): Promise<ToolResult> => host.ctx.tools.execute(session, name, args)

    it('marks read, glob and grep read-only and write, edit mutating', () => {
      const readOnly = Object.fromEntries(['read', 'glob', 'grep', 'write', 'edit'].map((n) => [n, !!host.ctx.tools.get(n)?.readOnly]))
      expect(readOnly).to.deep.equal({ read: true, glob: true, grep: true, write: false, edit: false })
    })

    it('writes, reads, edits, globs and greps inside the cwd', async () => {
      expect((await run('write', { path: 'out/new.txt', content: 'hello\nworld\n' })).result).to.deep.equal({ path: join('out', 'new.txt'), bytes: 12 })
      expect(await readFile(join(cwd, 'out/new.txt'), 'utf8')).to.equal('hello\nworld\n')
      expect((await run('read', { path: 'out/new.txt' })).result).to.deep.equal({ path: 'out/new.txt', content: 'hello\nworld\n' })
      expect((await run('edit', { path: 'out/new.txt', old: 'world', new: 'there' })).error).to.equal(undefined)
      expect(await readFile(join(cwd, 'out/new.txt'), 'utf8')).to.equal('hello\nthere\n')
      expect((await run('glob', { pattern: 'src/*.ts' })).result).to.deep.equal({ files: ['src/a.ts', 'src/b.ts'] })
      expect((await run('glob', {})).result.files).to.deep.equal(['notes.md', 'out/new.txt', 'src/a.ts', 'src/b.ts'])
      expect((await run('grep', { pattern: 'TODO' })).result).to.deep.equal({
        matches: [{ path: 'notes.md', line: 1, text: 'TODO notes' }, { path: 'src/b.ts', line: 2, text: '// TODO b' }],
        truncated: false,
      })
      expect((await run('grep', { pattern: 'TODO', include: 'src/**' })).result.matches).to.have.length(1)
    })

    it('writes content over 1 MiB whole over a longer file (through the pool), and an edit that grows a file past it', async () => {
      const long = 'x'.repeat(4 << 20)
      expect((await run('write', { path: 'big/long.txt', content: long })).error).to.equal(undefined)
      const content = Array.from({ length: 3 << 16 }, (_, i) => `line ${i}\n`).join('')
      expect((await run('write', { path: 'big/long.txt', content })).result).to.deep.equal({ path: join('big', 'long.txt'), bytes: Buffer.byteLength(content) })
      expect(await readFile(join(cwd, 'big/long.txt'), 'utf8')).to.equal(content)
      await run('write', { path: 'big/small.txt', content: 'head MARK tail' })
      expect((await run('edit', { path: 'big/small.txt', old: 'MARK', new: 'y'.repeat(2 << 20) })).error).to.equal(undefined)
      expect(await readFile(join(cwd, 'big/small.txt'), 'utf8')).to.equal(`head ${'y'.repeat(2 << 20)} tail`)
    })

    it('creates every missing directory of a deep path in one write', async () => {
      const path = Array.from({ length: 20 }, (_, i) => `d${i}`).join('/') + '/leaf.txt'
      expect((await run('write', { path, content: 'deep' })).error).to.equal(undefined)
      expect(await readFile(join(cwd, path), 'utf8')).to.equal('deep')
    })

    it('reads a part of a file by `offset` and `limit` (characters), saying where it starts and how long the file is', async () => {
      await run('write', { path: 'big.md', content: '第一行\n第二行\n第三行\n' })
      expect((await run('read', { path: 'big.md', offset: 4, limit: 3 })).result).to.deep.equal({ path: 'big.md', offset: 4, content: '第二行', chars: 12 })
      expect((await run('read', { path: 'big.md', offset: 8 })).result).to.deep.equal({ path: 'big.md', offset: 8, content: '第三行\n', chars: 12 })
      // Past the end: nothing, and where the end is.
      expect((await run('read', { path: 'big.md', offset: 100, limit: 5 })).result).to.deep.equal({ path: 'big.md', offset: 12, content: '', chars: 12 })
      expect((await run('read', { path: 'big.md', offset: -1 })).error?.code).to.equal('TOOL_INVALID_ARGS')
      expect((await run('read', { path: 'big.md', limit: 0 })).error?.code).to.equal('TOOL_INVALID_ARGS')
    })

    it('never starts or ends a part inside a surrogate pair (a lone half is not valid Unicode)', async () => {
      await run('write', { path: 'emoji.md', content: 'a😀b😀' })
      // 'a' then the pair at 1–2: a limit of 2 would end between its halves, an offset of 2 start there.
      expect((await run('read', { path: 'emoji.md', offset: 0, limit: 2 })).result).to.include({ offset: 0, content: 'a' })
      expect((await run('read', { path: 'emoji.md', offset: 2, limit: 3 })).result).to.include({ offset: 1, content: '😀b' })
      expect((await run('read', { path: 'emoji.md', offset: 4, limit: 1 })).result).to.include({ offset: 4, content: '😀' })
    })

    it('refuses edits that are ambiguous or miss, and reads of missing files, with codes', async () => {
      expect((await run('edit', { path: 'src/b.ts', old: 'b', new: 'c' })).error?.code).to.equal('BAD_REQUEST')
      expect((await run('edit', { path: 'src/b.ts', old: 'absent', new: 'c' })).error?.code).to.equal('BAD_REQUEST')
      expect(await readFile(join(cwd, 'src/b.ts'), 'utf8')).to.equal('export const b = 2\n// TODO b\n')
      expect((await run('read', { path: 'missing.txt' })).error?.code).to.equal('NOT_FOUND')
      expect((await run('grep', { pattern: '(' })).error?.code).to.equal('PATTERN_REJECTED')
    })

    it('refuses `..`, absolute paths and patterns leading out of the cwd', async () => {
      const escape = join('..', outside.split('/').pop()!, 'secret.txt')
      for (const [name, args] of [
        ['read', { path: escape }],
        ['read', { path: join(outside, 'secret.txt') }],
        ['read', { path: 'src/../../x' }],
        ['edit', { path: escape, old: 'outside', new: 'inside' }],
        ['glob', { pattern: '../**' }],
        ['glob', { pattern: '/etc/*' }],
        ['grep', { pattern: 'secret', include: '../**' }],
      ] as const) {
        expect((await run(name, args)).error?.code, `${name} ${JSON.stringify(args)}`).to.equal('PATH_OUTSIDE_WORKSPACE')
      }
      expect(await readFile(join(outside, 'secret.txt'), 'utf8')).to.equal('outside secret\n')
    })

    it('refuses writes outside the cwd and leaves the outside untouched', async () => {
      const outsideName = outside.split('/').pop()!
      expect((await run('write', { path: join('..', outsideName, 'secret.txt'), content: 'pwned' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect((await run('write', { path: join(outside, 'created.txt'), content: 'pwned' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect(await readFile(join(outside, 'secret.txt'), 'utf8')).to.equal('outside secret\n')
      expect(existsSync(join(outside, 'created.txt'))).to.equal(false)
    })

    it('refuses a symlink inside the cwd that leads out of it, for reads and writes', async () => {
      await symlink(outside, join(cwd, 'door'))
      await symlink(join(outside, 'secret.txt'), join(cwd, 'secret-link.txt'))
      expect((await run('read', { path: 'door/secret.txt' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect((await run('read', { path: 'secret-link.txt' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect((await run('write', { path: 'secret-link.txt', content: 'pwned' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect((await run('write', { path: 'door/created.txt', content: 'pwned' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect((await run('write', { path: 'door/deeper/created.txt', content: 'pwned' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect((await run('edit', { path: 'secret-link.txt', old: 'outside', new: 'inside' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect(await readFile(join(outside, 'secret.txt'), 'utf8')).to.equal('outside secret\n')
      expect(existsSync(join(outside, 'created.txt'))).to.equal(false)
      expect(existsSync(join(outside, 'deeper'))).to.equal(false)
      // A symlinked directory is not walked by glob or grep either.
      expect((await run('glob', { pattern: '**/*' })).result.files).to.not.include('door/secret.txt')
      expect((await run('grep', { pattern: 'outside secret' })).result.matches).to.deep.equal([])
    })

    it('refuses a dangling symlink whose target lies outside the cwd, and a symlink loop', async () => {
      await symlink(join(outside, 'not-yet.txt'), join(cwd, 'dangling.txt'))
      expect((await run('write', { path: 'dangling.txt', content: 'pwned' })).error?.code).to.equal('PATH_OUTSIDE_WORKSPACE')
      expect(existsSync(join(outside, 'not-yet.txt'))).to.equal(false)
      // A dangling link to a new file inside the cwd is fine: writing creates that file.
      await symlink(join(cwd, 'later.txt'), join(cwd, 'to-later.txt'))
      expect((await run('write', { path: 'to-later.txt', content: 'ok' })).error).to.equal(undefined)
      expect(await readFile(join(cwd, 'later.txt'), 'utf8')).to.equal('ok')
      await symlink(join(cwd, 'loop-b'), join(cwd, 'loop-a'))
      await symlink(join(cwd, 'loop-a'), join(cwd, 'loop-b'))
      expect((await run('write', { path: 'loop-a', content: 'x' })).error?.code).to.equal('TOOL_INVALID_ARGS')
    })

    it('allows a symlink that stays inside the cwd', async () => {
      await symlink(join(cwd, 'src'), join(cwd, 'alias'))
      expect((await run('read', { path: 'alias/a.ts' })).result?.content).to.equal('export const a = 1\n')
    })
  })
})
