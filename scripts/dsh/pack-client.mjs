// The browser half of the DSH bundle (DSH rc.8 client modules, docs/dsh.md "The panel in DSH's app"):
// esbuild bundles adapters/dsh/client into the closure form rc.8's module table loads —
// `window.__ModuleLoader__.load({id, factory: (require) => exports})` — with React left to the page
// (`require('react')` is answered by DSH's shared table; a bundle with its own React would break
// hooks). `checkClientPackage` checks the package.json declaration the way rc.8 reads it: a malformed
// `dsh.client` fails DSH's whole web app at start, so a pack that would ship one fails instead.
import { build } from 'esbuild'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'

/** Modules the page shares; the bundle must request them, never carry them. */
export const PAGE_MODULES = ['react', 'react/jsx-runtime', 'react-dom', 'react-dom/client']

/** The `dsh.client` declaration of the bundle's package.json. */
export const CLIENT_DECLARATION = {
  platform: 'web',
  inject: ['@deepseek-ai/dsh-client-runtime', '@deepseek-ai/dsh-client-ui-conversation'],
}

export async function buildClient(root, outfile, id) {
  const result = await build({
    entryPoints: [join(root, 'adapters', 'dsh', 'client', 'index.ts')],
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'browser',
    target: 'es2022',
    external: PAGE_MODULES,
    // The milestone derivation comes from protocol's source alone (no schemas, no readers in the page).
    alias: { '@taskward/protocol/milestones': join(root, 'packages', 'protocol', 'src', 'view', 'milestones.ts') },
    minify: true,
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  })
  const inputs = Object.keys(result.metafile.inputs)
  const carried = inputs.filter((input) => /node_modules\/(react|react-dom|scheduler)\//.test(input))
  if (carried.length) throw new Error(`the panel bundle would carry its own React: ${carried.join(', ')}`)
  const code = result.outputFiles[0].text
  const wrapped = `window.__ModuleLoader__.load({id:${JSON.stringify(id)},factory:(require)=>{var module={exports:{}};var exports=module.exports;${code}\nreturn module.exports}});\n`
  const { writeFileSync } = await import('node:fs')
  writeFileSync(outfile, wrapped)
  return { bytes: Buffer.byteLength(wrapped), gzipBytes: gzipSync(wrapped).length, modules: inputs.length }
}

function fail(message) {
  throw new Error(`dsh.client: ${message} (DSH rc.8 would refuse to start its web app with it)`)
}

/** The checks rc.8's client-modules scan applies to a package (packages/client/modules/src/index.ts). */
export function checkClientPackage(pkg, dir) {
  const decl = pkg.dsh?.client
  if (decl === undefined) return
  if (decl === null || typeof decl !== 'object' || Array.isArray(decl)) fail(`${pkg.name} has a non-object dsh.client declaration`)
  if (typeof decl.platform !== 'string') fail('dsh.client.platform must be a string')
  for (const field of ['inject', 'external']) {
    const value = decl[field]
    if (value !== undefined && (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))) fail(`dsh.client.${field} must be a string array`)
  }
  if (decl.immediately !== undefined && typeof decl.immediately !== 'boolean') fail('dsh.client.immediately must be a boolean')
  if ((decl.external ?? []).some((spec) => spec === pkg.name || spec === `${pkg.name}/client`)) fail('a package must not request itself in dsh.client.external')
  if (decl.platform !== 'web') return
  const entry = pkg.exports?.['./client']
  const rel = typeof entry === 'string' ? entry : entry && typeof entry === 'object' && typeof entry.default === 'string' ? entry.default : undefined
  if (entry !== undefined && rel === undefined) fail('exports["./client"] must be a string or an object with a string default')
  if (rel === undefined) fail(`${pkg.name} declares dsh.client but exports no "./client" bundle`)
  const file = join(dir, rel)
  if (!existsSync(file)) fail(`exports["./client"] names ${rel}, which is not in the package`)
  const text = readFileSync(file, 'utf8')
  // Our own check, not rc.8's scan: rc.8 serves whatever file is named, but one that does not register
  // under the package's name is not the module DSH's page then asks for, so the panel would not appear.
  if (!text.startsWith(`window.__ModuleLoader__.load({id:${JSON.stringify(pkg.name)},`)) {
    throw new Error(`dsh.client: ${rel} does not register itself as ${pkg.name} with window.__ModuleLoader__.load (pack:dsh's own check: DSH would load it, but the panel would not appear)`)
  }
}
