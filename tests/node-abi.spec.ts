import { expect } from 'chai'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/**
 * The dependencies that run an install script, and why that script does not tie the install to one
 * Node: esbuild's picks its platform package (@esbuild/linux-x64, a Go binary, no Node ABI).
 */
const INSTALL_SCRIPTS: Record<string, string> = {
  esbuild: 'selects its platform binary (Go, independent of the Node ABI)',
}

/*
 * npm test runs the suites on the machine's Node and again on Node 24 from one `npm ci`
 * (docs/testing.md, "Node versions"). That holds while no dependency is a native addon compiled for
 * one Node ABI: a new one would load on the Node it was built for and fail (or be rebuilt) on the other.
 */
describe('one npm ci serves every Node the suites run on', () => {
  it('no dependency builds a native addon, and only the known install scripts run', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
    const scripted: string[] = []
    for (const [path, entry] of Object.entries<{ hasInstallScript?: boolean, gypfile?: boolean }>(lock.packages)) {
      expect(entry.gypfile, `${path} builds a native addon (node-gyp)`).to.not.equal(true)
      if (entry.hasInstallScript) scripted.push(path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
    }
    for (const name of scripted) expect(INSTALL_SCRIPTS, `${name} runs an install script: say why it does not depend on the Node ABI`).to.have.property(name)
  })

  it('no compiled addon (*.node) is installed', () => {
    const addons: string[] = []
    for (const entry of readdirSync(join(ROOT, 'node_modules'), { recursive: true, withFileTypes: true })) {
      if (entry.isFile() && entry.name.endsWith('.node')) addons.push(join(entry.parentPath, entry.name))
    }
    expect(addons).to.deep.equal([])
  })
})
