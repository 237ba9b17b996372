import { expect } from 'chai'
import type { ToolResult } from '@taskward/host'
import { readdir, readFile } from 'node:fs/promises'
import { useToolWorkspace } from './tool-workspace'

/**
 * A control character in a file tool's path or glob is a malformed argument (TOOL_INVALID_ARGS naming the
 * character and where it is), not a path outside the workspace, and nothing is read or written.
 */
describe('host: control characters in file tool paths and globs', function () {
  this.timeout(60_000)
  const workspace = useToolWorkspace({ 'a': 'the file a\n', 'src/b.ts': 'export const b = 1\n' })
  const run = workspace.run

  function expectRefused(result: ToolResult, what: string, argument: string, name: string, position: number) {
    expect(result.error?.code, JSON.stringify(result)).to.equal('TOOL_INVALID_ARGS')
    expect(result.error?.message).to.equal(`${what} has ${name} at position ${position}; remove it.`)
    const unicode = /\((U\+[0-9A-F]{4})\)/.exec(name)?.[1] ?? /U\+[0-9A-F]{4}/.exec(name)![0]
    expect(result.error?.details).to.deep.equal({ argument, character: unicode, position })
    // The message never carries the raw character (a log line or a terminal would act on it).
    expect(result.error?.message).to.not.match(/[\u0000-\u001f\u007f-\u009f]/)
  }

  it('read, write and edit: a NUL is named at its position (not "outside the working directory")', async () => {
    expectRefused(await run('read', { path: 'a\u0000b' }), 'Path', 'path', 'a NUL (U+0000)', 2)
    // The NUL would cut the path to "a" at the system call: the file a stays as it was.
    expectRefused(await run('write', { path: 'a\u0000b', content: 'overwritten' }), 'Path', 'path', 'a NUL (U+0000)', 2)
    expectRefused(await run('edit', { path: 'a\u0000', old: 'the', new: 'THE' }), 'Path', 'path', 'a NUL (U+0000)', 2)
    expect(await readFile(`${workspace.cwd}/a`, 'utf8')).to.equal('the file a\n')
    expectRefused(await run('read', { path: '\u0000' }), 'Path', 'path', 'a NUL (U+0000)', 1)
    // Also ahead of the other path checks: an absolute or escaping path with a NUL is named for the NUL.
    expectRefused(await run('read', { path: '/etc/passwd\u0000' }), 'Path', 'path', 'a NUL (U+0000)', 12)
    expectRefused(await run('read', { path: '../x\u0000' }), 'Path', 'path', 'a NUL (U+0000)', 5)
  })

  it('every control character U+0001–U+001F and U+007F, counted in characters, first one named', async () => {
    for (let point = 1; point <= 0x20; point++) {
      const char = point === 0x20 ? '\u007f' : String.fromCharCode(point)
      const unicode = `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`
      const names: Record<string, string> = { 'U+0009': 'a tab', 'U+000A': 'a line feed', 'U+000D': 'a carriage return', 'U+001B': 'an escape', 'U+007F': 'a DEL' }
      const name = names[unicode] ? `${names[unicode]} (${unicode})` : `the control character ${unicode}`
      const written = await run('write', { path: `src/new${char}file.ts`, content: 'x' })
      expectRefused(written, 'Path', 'path', name, 8)
    }
    // Nothing was created by any of them.
    expect((await readdir(`${workspace.cwd}/src`)).sort()).to.deep.equal(['b.ts'])
    // Positions count characters, not UTF-16 units or bytes; the first control character is the one named.
    expectRefused(await run('read', { path: 'é😀\n\u0000' }), 'Path', 'path', 'a line feed (U+000A)', 3)
    // Non-ASCII letters are not control characters.
    expect((await run('read', { path: 'caf\u00e9' })).error?.code).to.equal('NOT_FOUND')
  })

  it('the C1 control characters U+0080–U+009F too: a NEL splits lines for Unicode-aware readers, a CSI starts a terminal escape', async () => {
    for (let point = 0x80; point <= 0x9f; point++) {
      const unicode = `U+${point.toString(16).toUpperCase().padStart(4, '0')}`
      expectRefused(await run('write', { path: `src/x${String.fromCharCode(point)}[31m.ts`, content: 'x' }), 'Path', 'path', `the control character ${unicode}`, 6)
    }
    expectRefused(await run('glob', { pattern: '**/\u0085*' }), 'The glob pattern', 'pattern', 'the control character U+0085', 4)
    expect((await readdir(`${workspace.cwd}/src`)).sort()).to.deep.equal(['b.ts'])
  })

  it('glob patterns: the glob tool and grep\'s include', async () => {
    expectRefused(await run('glob', { pattern: 'src/*\u0000.ts' }), 'The glob pattern', 'pattern', 'a NUL (U+0000)', 6)
    expectRefused(await run('glob', { pattern: '**/*\n' }), 'The glob pattern', 'pattern', 'a line feed (U+000A)', 5)
    expectRefused(await run('grep', { pattern: 'const', include: 'src/\u0000**' }), 'The glob pattern', 'include', 'a NUL (U+0000)', 5)
    expectRefused(await run('grep', { pattern: 'const', include: '\u007f' }), 'The glob pattern', 'include', 'a DEL (U+007F)', 1)
    // Clean patterns still work.
    expect((await run('glob', { pattern: 'src/*.ts' })).result).to.deep.equal({ files: ['src/b.ts'] })
    expect((await run('grep', { pattern: 'const', include: 'src/**' })).result).to.deep.include({ matches: [{ path: 'src/b.ts', line: 1, text: 'export const b = 1' }] })
  })
})
