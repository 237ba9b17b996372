#!/usr/bin/env node
// `npm start`: boots cordis.yml through the cordis CLI, running the TypeScript sources directly
// (tsx + the `source` export condition), so a fresh clone needs no build step.
// Flags: --no-demo (skip the demo session on an empty database), --port N, --data DIR.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { hostConfigFile } from './host-config.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const cli = join(dirname(require.resolve('cordis/package.json')), 'lib/bin/cordis.mjs')

const env = { ...process.env }
const args = process.argv.slice(2)
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--no-demo') env.TASKWARD_DEMO = '0'
  else if (args[i] === '--port') env.PORT = args[++i]
  else if (args[i] === '--data') env.TASKWARD_DATA = args[++i]
  else {
    console.error(`Unknown option ${args[i]}. Usage: npm start -- [--no-demo] [--port N] [--data DIR]`)
    process.exit(2)
  }
}
env.NODE_OPTIONS = [env.NODE_OPTIONS, '--import tsx', '--conditions source'].filter(Boolean).join(' ')

// The CLI forks the host worker; both stay in this process group, so a terminal's Ctrl-C reaches the
// worker directly. A signal sent to this script alone is forwarded to the CLI, and the worker shuts
// down cleanly when the CLI goes away (the host listens for the daemon's IPC channel closing).
const child = spawn(process.execPath, [cli, 'start', hostConfigFile(root, env)], { cwd: root, env, stdio: 'inherit' })
let stopping = false
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopping = true
    child.kill(signal)
  })
}
child.on('exit', (code) => process.exit(stopping ? 0 : code ?? 1))
