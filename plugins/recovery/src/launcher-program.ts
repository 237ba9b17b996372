import { COPY_SOURCE } from './launcher-copy'

// The launcher's whole program, run by a small node process of its own (`node -e`, no module
// resolution, so it survives any bundling of this plugin). Why a process and not a thread: spawn()
// forks the calling process, and a fork copies the page tables of the whole address space — from a
// host of ~370 MB that is ~20–30 ms and ~10–15 ms of kernel CPU per check (measured, Node 20 and 24),
// wherever in the host it is called, while the host's own page faults wait. From this ~50 MB process it
// is ~2 ms, and the host forks once, for the launcher. Each check: argv spawned directly (never a
// shell), detached as its own process group (killed as a whole on timeout and after the leader exits),
// output sent back in chunks; it ends at the latest `graceMs` after the process exited or was
// killed, whoever still holds its pipes. Program lookups read the file system as spawn will (X_OK on
// each PATH entry, in order). The host keeps only the head and the tail of the output (BoundedOutput,
// `outputLimitBytes`), so only those cross, without slowing the check: the first `outputLimitBytes`
// are posted as they come; the rest waits here, only its newest `outputLimitBytes` kept and the older
// bytes counted, and is posted — the count, then the tail — when the run ends. So a check that floods
// its output costs the host's event loop a bounded number of messages however much it writes (every
// chunk it took was a message, read and decoded on the event loop), a busy host has nothing piling up
// for it, and the tail where test runners summarize still arrives. Each run's pid is posted as it
// starts, so the host can kill its group if this process dies; and when the host goes away — even
// SIGKILLed — the IPC channel closes and this process kills every check it runs, then exits.
export const LAUNCHER_SOURCE = `
const groups = new Set()
// The areas 'prepare' made that no 'remove' has removed yet (the host's until then).
const areas = new Set()
// Each running check's pid by request id, so its owner can cancel it ('cancel').
const running = new Map()
// The dependency directories each area mounts instead of copying (bwrap checks): opened here, by the
// copy, through the directories it opened, and passed to bwrap by descriptor (--ro-bind-fd), so what a
// check gets read-only is the directory the copy saw, whatever a process swaps in at its path later.
const mounted = new Map()
const closeMounts = async (root) => {
  const handles = mounted.get(root) ?? []
  mounted.delete(root)
  await Promise.all(handles.map((handle) => handle.close().catch(() => {})))
}
const post = (message) => {
  try { process.send(message) } catch {}
}
const { spawn } = require('node:child_process')
const { accessSync, chmodSync, closeSync, constants, copyFileSync, fstatSync, mkdirSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, symlinkSync, writeSync } = require('node:fs')
const { chmod, copyFile, mkdir, mkdtemp, open, readdir, readlink, realpath, rm, symlink } = require('node:fs/promises')
const { delimiter, dirname, isAbsolute, join, relative } = require('node:path')

const killGroup = (pid) => {
  if (pid === undefined) return
  try { process.kill(-pid, 'SIGKILL') } catch {}
}
const executable = (path) => {
  try { accessSync(path, constants.X_OK); return true } catch { return false }
}
// Absolute entries only: a relative one would be read against this process's cwd, but a check's
// against its own (the host passes the check's PATH, which has none; this holds whoever asks).
const which = (program, path) => {
  for (const dir of path.split(delimiter).filter((dir) => isAbsolute(dir))) {
    const candidate = join(dir, program)
    if (executable(candidate)) return candidate
  }
  return null
}

function run(id, { file, args, cwd, env, timeoutMs, graceMs, outputLimitBytes, area }) {
  let settled = false
  let timedOut = false
  let exit
  let grace
  let spawnError
  const finish = (outcome) => {
    if (settled) return
    settled = true
    clearTimeout(timer)
    clearTimeout(grace)
    // The tail goes before the outcome: it is where test runners summarize.
    if (skipped) post({ id, kind: 'skipped', bytes: skipped })
    for (const chunk of tail) post({ id, kind: 'output', chunk })
    post({ id, kind: 'done', outcome })
  }
  const ended = () => finish({ exit, ...timedOut ? { timedOut } : {} })
  const startGrace = () => {
    grace ??= setTimeout(() => {
      child.stdout?.destroy()
      child.stderr?.destroy()
      ended()
    }, graceMs)
  }
  // The area's mounted dependency directories as descriptors 3, 4…, in the order prepare reported them.
  const mounts = (area !== undefined && mounted.get(area)) || []
  const child = spawn(file, args, { cwd, env, shell: false, detached: true, stdio: ['ignore', 'pipe', 'pipe', ...mounts.map((handle) => handle.fd)] })
  if (child.pid !== undefined) {
    groups.add(child.pid)
    running.set(id, child.pid)
    post({ id, kind: 'started', pid: child.pid })
  }
  // The head, posted as it comes; then the newest outputLimitBytes (at least) of the rest, and what lay
  // between as a count (exact: the host would have dropped those bytes, its tail is shorter than this).
  let headLeft = outputLimitBytes
  const tail = []
  let tailBytes = 0
  let skipped = 0
  const output = (chunk) => {
    if (settled) return
    if (headLeft > 0) {
      headLeft -= chunk.length
      return post({ id, kind: 'output', chunk })
    }
    tail.push(chunk)
    tailBytes += chunk.length
    while (tailBytes - tail[0].length >= outputLimitBytes) {
      const first = tail.shift()
      tailBytes -= first.length
      skipped += first.length
    }
  }
  child.stdout.on('data', output)
  child.stderr.on('data', output)
  const timer = setTimeout(() => {
    timedOut = true
    killGroup(child.pid)
    startGrace()
  }, timeoutMs)
  child.on('error', (error) => {
    spawnError = error.code ?? 'error'
    // A process that never started emits no useful close; one that did is settled by close.
    if (child.pid === undefined) finish({ spawnError })
  })
  child.on('exit', (code, signal) => {
    exit = { code, signal }
    // Whatever the leader left behind in its group goes too.
    killGroup(child.pid)
    startGrace()
  })
  child.on('close', (code, signal) => {
    groups.delete(child.pid)
    running.delete(id)
    if (spawnError) return finish({ spawnError })
    exit ??= { code, signal }
    killGroup(child.pid)
    ended()
  })
}

${COPY_SOURCE}
// A check's area: a new directory under base with an empty home and a copy of cwd (symlinks as links,
// the root .git left out unless keepGit, and the real paths in exclude: the data directory). Here,
// where the file system's round trips wait for nothing else: on a busy host each of the copy's dozens
// would wait for its event loop.
// With dependencies ({ names, paths }), the dependency directories are opened for bwrap to mount, not
// copied (only where directories are reached through /proc/self/fd: elsewhere they are copied).
const prepare = async (id, { cwd, base, keepGit, exclude = [], dependencies, mount }) => {
  // The directory cwd names: cp copies a path that is a symlink as the link, and a check would run
  // in the workspace itself.
  const source = await realpath(cwd)
  // A temp directory inside the workspace: the copy would copy itself, level after level.
  const within = relative(source, await realpath(base))
  if (within === '' || !(within === '..' || within.startsWith('../') || isAbsolute(within))) {
    throw new Error('cannot copy the workspace ' + source + ' into the temp directory ' + base + ', which is inside it: set TMPDIR to a directory outside the workspace')
  }
  const root = await mkdtemp(join(base, 'taskward-check-'))
  // The host removes it should this process die before the copy is done (it cannot, then).
  post({ id, kind: 'made', root })
  areas.add(root)
  try {
    await mkdir(join(root, 'home'))
    // Mounted only where directories are reached by descriptor; elsewhere they are copied.
    const canMount = process.platform === 'linux' && procFd && executable('/proc/self/fd')
    const deps = dependencies ? { names: new Set(dependencies.names), paths: new Set(dependencies.paths), mount: !!mount && canMount, handles: [], rels: [] } : undefined
    if (deps) mounted.set(root, deps.handles)
    await copyTree(source, join(root, 'work'), !keepGit, new Set(exclude), source, deps)
    return { root, real: await realpath(root), mounts: deps && deps.mount ? deps.rels : [] }
  } catch (error) {
    await closeMounts(root)
    // As a removal does (a filled read-only directory is not removed without its mode back), and the
    // copy's own error stays the answer; one still left stays in areas, removed again once the host is gone.
    await removeTree(root).then(() => areas.delete(root), () => {})
    throw error
  }
}
// A check may leave its copy unremovable (a directory chmod 000 with files in it): give every real
// directory below back to its owner (symlinks are not followed: readdir's types are lstat's), then
// remove again. A removal that fails leaks the copy and, before, failed the attempt with it.
const grantAll = async (dir) => {
  await chmod(dir, 0o700).catch(() => {})
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
  for (const entry of entries) if (entry.isDirectory()) await grantAll(join(dir, entry.name))
}
const removeTree = async (path) => {
  try {
    await rm(path, { recursive: true, force: true })
  } catch {
    await grantAll(path)
    await rm(path, { recursive: true, force: true })
  }
}
const settleWith = (id, work) => work.then(
  (outcome) => post({ id, kind: 'done', outcome }),
  (error) => post({ id, kind: 'failed', message: String(error && error.message || error) }),
)

process.on('message', ({ id, kind, request }) => {
  try {
    if (kind === 'prepare') {
      settleWith(id, prepare(id, request))
    } else if (kind === 'remove') {
      settleWith(id, closeMounts(request.path).then(() => removeTree(request.path)).then(() => { areas.delete(request.path); return true }))
    } else if (kind === 'which') {
      post({ id, kind: 'done', outcome: request.programs.map((program) => which(program, request.path)) })
    } else if (kind === 'cancel') {
      // Killed as on a timeout (its close then reports it); one that already ended is not here.
      const pid = running.get(id)
      if (pid !== undefined) killGroup(pid)
    } else if (kind === 'executable') {
      post({ id, kind: 'done', outcome: executable(request.path) })
    } else {
      run(id, request)
    }
  } catch (error) {
    post({ id, kind: 'fault', message: String(error && error.message || error) })
  }
})
// The host is gone (exited, crashed or SIGKILLed): nothing is left to time the checks out. A write to
// it can fail (EPIPE, emitted on process) before the channel's end is read: the same news, not a crash.
// Nor is anything left to remove the copies it was given: removed here (once the checks are killed),
// or every crashed host would leave whole workspaces behind in the temp directory.
let gone = false
const hostGone = () => {
  if (gone) return
  gone = true
  for (const pid of groups) killGroup(pid)
  Promise.all([...areas].map((root) => removeTree(root).catch(() => {}))).finally(() => process.exit(0))
}
process.on('disconnect', hostGone)
process.on('error', hostGone)
`
