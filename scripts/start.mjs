#!/usr/bin/env node
// `npm start`: boots cordis.yml through the cordis CLI, running the TypeScript sources directly
// (tsx + the `source` export condition), so a fresh clone needs no build step.
// Flags: --no-demo (skip the demo session on an empty database), --port N, --data DIR,
// --config FILE (another cordis.yml; the layer files beside it apply), --patch FILE (a DSH patch list,
// repeatable, applied in order after the layer files), --dump-config (print the composed rows with each
// row's history and exit 0 without starting), --demo-only (run the demo on an empty database, then stop:
// exit 0 when it ends on its pending repair proposal, 1 otherwise).
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { dumpHostConfig, hostConfigFile, orExit } from './host-config.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const cli = join(dirname(require.resolve('cordis/package.json')), 'lib/bin/cordis.mjs')

const env = { ...process.env }
const args = process.argv.slice(2)
/** The base file (--config, else cordis.yml) and the --patch files composed onto it (scripts/host-config.mjs). */
let config = join(root, 'cordis.yml')
const patches = []
let dumpConfig = false
let demoOnly = false
// npm runs this script in the package root and names where the user typed `npm start` in INIT_CWD:
// relative paths are meant from there. A process that only inherited INIT_CWD (started with another
// working directory by some npm script, a test say) means them from its own working directory.
const startedByNpm = Boolean(process.env.INIT_CWD) && process.env.npm_package_json === join(root, 'package.json')
  && realpathSync(process.cwd()) === realpathSync(root)
const invokedIn = startedByNpm ? process.env.INIT_CWD : process.cwd()
const value = (i) => {
  if (i >= args.length || args[i].startsWith('--')) {
    console.error(`${args[i - 1]} needs a value.`)
    process.exit(2)
  }
  return args[i]
}
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--no-demo') env.TASKWARD_DEMO = '0'
  else if (args[i] === '--demo-only') demoOnly = true
  else if (args[i] === '--port') env.PORT = value(++i)
  // The host runs in the package root: a relative data directory is resolved here, like --config.
  else if (args[i] === '--data') env.TASKWARD_DATA = resolve(invokedIn, value(++i))
  else if (args[i] === '--config') config = resolve(invokedIn, value(++i))
  else if (args[i] === '--patch') patches.push(resolve(invokedIn, value(++i)))
  else if (args[i] === '--dump-config') dumpConfig = true
  else {
    console.error(`Unknown option ${args[i]}. Usage: npm start -- [--no-demo | --demo-only] [--port N] [--data DIR] [--config FILE] [--patch FILE]… [--dump-config]`)
    process.exit(2)
  }
}
// A port the server can listen on and print: 0 (any port) would leave nothing to print or open, and
// the host would wait for a listener that never reports its port.
if (env.PORT !== undefined && env.PORT !== '' && !/^(?:[1-9]\d{0,4})$/.test(env.PORT) || Number(env.PORT) > 65535) {
  console.error(`CONFIG_INVALID: the port ${JSON.stringify(env.PORT)} (--port or PORT) is not a port number from 1 to 65535. Give one, e.g. npm start -- --port 5140.`)
  process.exit(2)
}
if (demoOnly && env.TASKWARD_DEMO === '0') {
  console.error('--demo-only and --no-demo contradict each other.')
  process.exit(2)
}
if (dumpConfig && demoOnly) {
  console.error('--dump-config starts nothing, so --demo-only has nothing to run; give one of them.')
  process.exit(2)
}
const layers = { baseFile: basename(config), patches }
if (dumpConfig) {
  process.stdout.write(orExit(() => dumpHostConfig(dirname(config), env, layers)))
  process.exit(0)
}
// --demo-only: the console writes the demo's outcome (JSON) to this file when the demo settles.
const resultDir = demoOnly ? mkdtempSync(join(tmpdir(), 'taskward-demo-')) : undefined
if (resultDir) env.TASKWARD_DEMO_RESULT = join(resultDir, 'outcome.json')
env.NODE_OPTIONS = [env.NODE_OPTIONS, '--import tsx', '--conditions source'].filter(Boolean).join(' ')
// libuv's threadpool for the host (packages/host/src/store/threadpool.ts, HOST_THREADPOOL_SIZE): every
// file-system call waits for one of its threads, and the default 4 made tool calls wait behind fsyncs
// at a few hundred sessions. Read by libuv when the pool starts, so it is set for the process, here.
if (!env.UV_THREADPOOL_SIZE) env.UV_THREADPOOL_SIZE = '16'

// The CLI forks the host worker; both stay in this process group, so a terminal's Ctrl-C reaches the
// worker directly. A signal sent to this script alone is forwarded to the CLI, and the worker shuts
// down cleanly when the CLI goes away (the host listens for the daemon's IPC channel closing).
// Refusals (TaskwardErrors) are logged as `CODE: message`, without a stack (scripts/coded-errors.mjs).
const codedErrors = pathToFileURL(join(root, 'scripts', 'coded-errors.mjs')).href
const child = spawn(process.execPath, [cli, 'start', hostConfigFile(dirname(config), env, layers), '--import', codedErrors], { cwd: root, env, stdio: 'inherit' })
let stopping = false
let exitCode
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopping = true
    child.kill(signal)
  })
}
child.on('exit', async (code) => {
  if (resultDir) rmSync(resultDir, { recursive: true, force: true })
  if (exitCode === undefined && demoOnly) console.error('The host stopped before the demo finished.')
  // A host serves until it is stopped: one that ended by itself with status 0 did not come up (the
  // server row failing to listen leaves nothing running). Say why when the port is taken; never exit 0.
  if (!stopping && code === 0) {
    const host = env.TASKWARD_HOST || '127.0.0.1'
    const port = Number(env.PORT || 5140)
    console.error(await portInUse(host, port)
      ? `The host ended during its start: port ${port} on ${host} is in use by another program, so the server could not listen. Stop that program, or start on another port: npm start -- --port N.`
      : 'The host ended by itself without being stopped: a plugin of cordis.yml failed to start (the log above names it).')
    process.exit(1)
  }
  process.exit(exitCode ?? (stopping ? 0 : demoOnly ? 1 : code ?? 1))
})

/** Whether another program listens on `host:port` (the address cordis.yml's server row takes by default). */
function portInUse(host, port) {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', (error) => resolve(error.code === 'EADDRINUSE'))
    probe.listen(port, host, () => probe.close(() => resolve(false)))
  })
}

if (demoOnly) {
  const DEMO_TIMEOUT_MS = 300_000
  const started = Date.now()
  const finish = (code, message) => {
    if (exitCode !== undefined) return
    exitCode = code
    ;(code ? console.error : console.log)(message)
    stopping = true
    child.kill('SIGINT')
  }
  const poll = setInterval(() => {
    let outcome
    try {
      outcome = JSON.parse(readFileSync(env.TASKWARD_DEMO_RESULT, 'utf8'))
    } catch {
      if (Date.now() - started > DEMO_TIMEOUT_MS) {
        clearInterval(poll)
        finish(1, `Demo failed: no outcome after ${DEMO_TIMEOUT_MS / 1000} s.`)
      }
      return
    }
    clearInterval(poll)
    if (outcome.status === 'ready' && outcome.proposalId) {
      finish(0, `Demo ready: session ${outcome.sessionId}, repair proposal ${outcome.proposalId} pending.`)
    } else {
      finish(1, `Demo failed (${outcome.status}): ${outcome.message ?? outcome.reason ?? 'it ended without its repair proposal'}`)
    }
  }, 200)
}
