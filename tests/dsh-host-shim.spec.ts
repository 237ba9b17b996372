import { expect } from 'chai'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

/*
 * Inside DSH the bundle maps `@taskward/host` to scripts/dsh/host-shim.mjs (the kernel never enters
 * it). A name a plugin imports at run time that the shim lacks breaks the bundle's build, and only the
 * real-DSH suites would notice. This reads every value import of `@taskward/host` in the bundled code.
 */
const root = join(import.meta.dirname, '..')
const bundled = ['plugins/supervisor', 'plugins/workspace', 'plugins/admission', 'plugins/repair', 'plugins/recovery', 'plugins/console', 'plugins/openai', 'adapters/dsh']

async function sources(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...await sources(path))
    else if (/\.tsx?$/.test(entry.name)) out.push(path)
  }
  return out
}

describe('DSH bundle: the @taskward/host shim', () => {
  it('exports every name the bundled plugins and the adapter import from @taskward/host at run time', async () => {
    const wanted = new Map<string, string>()
    for (const pkg of bundled) {
      for (const file of await sources(join(root, pkg, 'src'))) {
        const text = await readFile(file, 'utf8')
        for (const match of text.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s*from\s*'@taskward\/host'/g)) {
          if (match[1]) continue
          for (const name of match[2].split(',').map((part) => part.trim()).filter(Boolean)) {
            if (name.startsWith('type ')) continue
            wanted.set(name.split(/\s+as\s+/)[0], file.slice(root.length + 1))
          }
        }
      }
    }
    expect(wanted.size).to.be.greaterThan(5)
    const shim = await import(join(root, 'scripts/dsh/host-shim.mjs'))
    const missing = [...wanted].filter(([name]) => !(name in shim)).map(([name, file]) => `${name} (${file})`)
    expect(missing).to.deep.equal([])
  })
})
