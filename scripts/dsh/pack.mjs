#!/usr/bin/env node
// `npm run pack:dsh`: ONE tarball that `dsh plugin --profile <p> add ./taskward-dsh-<v>.tgz` installs
// offline. esbuild bundles the adapter (adapters/dsh) with the plugins it loads and @taskward/protocol;
// `cordis` and `schemastery` are left to DSH's own `@deepseek-ai/cordis` / `@deepseek-ai/schemastery`
// (the bundle must not carry a second cordis), and `@taskward/host` is reduced to the four helpers in
// host-shim.mjs (no minato, no koa). The tarball's path is the last line printed.
import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import yaml from 'js-yaml'
import { buildClient, checkClientPackage, CLIENT_DECLARATION } from './pack-client.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const BUNDLE_NAME = 'taskward-dsh'
/** Module ids that must never be inside the bundle (checked on esbuild's metafile). */
const FORBIDDEN = [/node_modules\/cordis\//, /node_modules\/@cordisjs\//, /node_modules\/minato\//, /node_modules\/@minatojs\//, /node_modules\/koa/, /packages\/host\/src\/(index|sessions|agents|store|projections)/]

export async function packDsh({ outDir = join(root, 'build', 'dsh'), log = (line) => process.stdout.write(`[pack:dsh] ${line}\n`) } = {}) {
  const version = JSON.parse(readFileSync(join(root, 'adapters', 'dsh', 'package.json'), 'utf8')).version
  const staging = join(outDir, 'package')
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })
  const result = await build({
    entryPoints: [join(root, 'adapters', 'dsh', 'src', 'index.ts')],
    outfile: join(staging, 'index.js'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    conditions: ['source'],
    alias: {
      cordis: '@deepseek-ai/cordis',
      schemastery: '@deepseek-ai/schemastery',
      '@taskward/host': join(root, 'scripts', 'dsh', 'host-shim.mjs'),
      '@taskward/plugin-database': join(root, 'scripts', 'dsh', 'database-shim.mjs'),
    },
    external: ['@deepseek-ai/cordis', '@deepseek-ai/schemastery'],
    // ESM output: CommonJS dependencies that call require() get Node's own.
    banner: { js: "import { createRequire as __taskwardRequire } from 'node:module'; const require = __taskwardRequire(import.meta.url);" },
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  })
  const inputs = Object.keys(result.metafile.inputs)
  const forbidden = inputs.filter((input) => FORBIDDEN.some((pattern) => pattern.test(input)))
  if (forbidden.length) throw new Error(`the DSH bundle would carry host-only modules: ${forbidden.join(', ')}`)
  // The panel in DSH's web app (adapters/dsh/client): a client module rc.8 serves at /plugins/<name>/client.js.
  const client = await buildClient(root, join(staging, 'client.js'), BUNDLE_NAME)
  const pkg = {
    name: BUNDLE_NAME,
    version,
    description: 'Taskward (supervised tasks, repair after completion) for the DSH host: one bundle for `dsh plugin add`.',
    type: 'module',
    main: './index.js',
    exports: { '.': './index.js', './client': './client.js', './supervision-guard': './supervision-guard.js', './package.json': './package.json' },
    license: 'MIT',
    engines: { node: '^22.19 || >=24' },
    dsh: { bundle: { patch: './cordis.patch.yml' }, client: CLIENT_DECLARATION },
  }
  checkClientPackage(pkg, staging)
  writeFileSync(join(staging, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
  // DSH's list format: rc.8's launcher needs the `hmr` row enabled (it refuses to start otherwise),
  // then Taskward's own row.
  writeFileSync(join(staging, 'cordis.patch.yml'), yaml.dump([
    { id: 'hmr', disabled: false },
    { insert: [{ id: 'taskward', name: BUNDLE_NAME, config: {} }] },
  ]))
  // The row of the `taskward` agent preset (adapters/dsh/src/supervision-preset.ts): it activates only
  // while the adapter provides `taskwardSupervision`, so DSH refuses to resume a supervised session without it.
  writeFileSync(join(staging, 'supervision-guard.js'), "export const name = 'taskward-supervision-guard'\nexport const inject = ['taskwardSupervision']\nexport function apply() {}\n")
  writeFileSync(join(staging, 'README.md'), `# ${BUNDLE_NAME}\n\nTaskward for DSH 0.1.0-rc.8. Install: \`dsh plugin --profile web add ./${BUNDLE_NAME}-${version}.tgz\`; see docs/dsh.md in the Taskward repository.\n`)
  writeFileSync(join(staging, 'LICENSE'), readFileSync(join(root, 'LICENSE')))
  // The console's scripts and styles, beside index.js (plugins/console/src/routes/pages.ts looks there).
  cpSync(join(root, 'plugins', 'console', 'assets'), join(staging, 'assets'), { recursive: true })
  const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', outDir], { cwd: staging, encoding: 'utf8' }).trim().split('\n').pop()
  const tarball = join(outDir, packed)
  log(`${inputs.length} modules bundled, index.js ${(statSync(join(staging, 'index.js')).size / 1024).toFixed(0)} KiB, client.js ${(client.bytes / 1024).toFixed(1)} KiB (${(client.gzipBytes / 1024).toFixed(1)} KiB gzipped), tarball ${(statSync(tarball).size / 1024).toFixed(0)} KiB (${relative(root, tarball)})`)
  return tarball
}

if (import.meta.url === `file://${process.argv[1]}`) {
  packDsh().then((tarball) => process.stdout.write(`${tarball}\n`), (error) => {
    process.stderr.write(`PACK_DSH_FAILED: ${error.message}\n`)
    process.exit(1)
  })
}
