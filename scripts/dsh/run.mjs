#!/usr/bin/env node
// `npm run dsh`: the newcomer's door to Taskward inside DSH. Installs Node 24 + DSH 0.1.0-rc.8 into the
// cache once (10-20 min; later runs reuse it), packs the bundle, adds it to the `web` profile of a
// temporary DSH_HOME (or TASKWARD_DSH_HOME to keep one), starts `dsh web` and prints the DSH URL and
// Taskward's login link. Ctrl-C stops DSH (a temporary home is removed).
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { dshPaths, installDsh } from './install.mjs'
import { writeOperatorToken } from './operator-token.mjs'
import { packDsh } from './pack.mjs'

const port = Number(process.env.PORT || 7860)
const dir = await installDsh()
const paths = dshPaths(dir)
const tarball = await packDsh()
const keep = !!process.env.TASKWARD_DSH_HOME
const home = process.env.TASKWARD_DSH_HOME || mkdtempSync(join(tmpdir(), 'taskward-dsh-'))
const token = randomBytes(32).toString('base64url')
// DSH's host process gets the libuv threadpool npm start gives ours (packages/host/src/store/threadpool.ts).
const env = { ...process.env, PATH: `${paths.nodeBin}:${paths.pnpmBin}:${process.env.PATH}`, DSH_HOME: home, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE || '16' }
if (process.env.npm_config_registry && !process.env.pnpm_config_registry) env.pnpm_config_registry = process.env.npm_config_registry
execFileSync(paths.node, [paths.dsh, 'plugin', '--profile', 'web', 'add', tarball], { env, cwd: home, stdio: 'inherit' })
// The operator token goes into the profile's own patch layer (0600 in a 0700 directory), so the printed
// link works for this start.
writeOperatorToken(home, token)
const dsh = spawn(paths.node, [paths.dsh, 'web', '--no-open', '--port', String(port)], { env, cwd: home, stdio: 'inherit' })
const origin = `http://127.0.0.1:${port}`
for (let i = 0; i < 240; i++) {
  const ok = await fetch(`${origin}/taskward/health`).then((r) => r.ok, () => false)
  if (ok) break
  await new Promise((resolve) => setTimeout(resolve, 500))
}
process.stdout.write(`\nDSH (with Taskward):     ${origin}/\nTaskward login link:     ${origin}/taskward/login?token=${token}&next=%2Ftaskward%2F\nDSH_HOME:                ${home}\n\nIn a DSH session type /task new <objective>. Ctrl-C stops DSH.\n`)
const stop = () => dsh.kill('SIGTERM')
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
dsh.on('exit', (code) => {
  if (!keep) rmSync(home, { recursive: true, force: true })
  process.exit(code ?? 0)
})
