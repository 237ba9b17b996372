import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { lstat, readdir, readlink, realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, posix, relative, resolve, sep } from 'node:path'
import type { Context } from 'cordis'
import { mainSessionOf, type Session, type ToolCall } from '@taskward/host'
import {
  comparePinnedSets, effectiveCycle, MAX_PINNED_FILES, needsPinBaseline, pinChangedResult, PinMatcher,
  pinnedSetDigest, taskOfStateRecord, TaskwardError, workspaceRelative,
  type CheckResult, type CheckSpec, type PinBaselineReason, type PinnedFile, type RecoveryState, type SessionEvent, type Task,
} from '@taskward/protocol'
import type { Recovery } from './service'

/** Bytes of pinned content hashed at most per stamp: a pin that matches a build tree is a mistake. */
const MAX_PINNED_BYTES = 256 * 1024 * 1024
/** Phases in which the agent works on a task, so that its checks' pins are closed to write tools. */
const LIVE: readonly Task['phase'][] = ['planning', 'awaiting-approval', 'active', 'reviewing', 'paused']
/** Argument names through which a tool is told which file to change. */
const PATH_ARGUMENTS = ['path', 'paths', 'file', 'files', 'filePath', 'file_path', 'target', 'destination', 'from', 'to']

function sha256File(path: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash('sha256')
    createReadStream(path).on('error', reject).on('data', (chunk) => hash.update(chunk)).on('end', () => resolvePromise(hash.digest('hex')))
  })
}

/**
 * Stamp the files under `root` that `matcher` pins: each file's sha256, a symlink's target text plus
 * the sha256 of the regular file it leads to (never walked into as a directory), `special` for anything else. Walks only directories that may hold pinned files and skips
 * the root `.git`. Refuses (`ARTIFACT_LIMIT`) rather than stamping part of the set. `mounts` are
 * directories (relative paths) read from elsewhere: a check's copy leaves the dependency directories
 * out and mounts them from the workspace, so their pinned files are read there.
 */
export async function stampPinned(root: string, matcher: PinMatcher, mounts: readonly { rel: string, source: string }[] = []): Promise<PinnedFile[]> {
  const files: PinnedFile[] = []
  let bytes = 0
  if (matcher.empty) return files
  const located = (path: string) => {
    const mount = mounts.find(({ rel }) => path === rel || path.startsWith(`${rel}/`))
    return mount ? join(mount.source, path.slice(mount.rel.length)) : join(root, path)
  }
  const walk = async (dir: string) => {
    let entries
    try {
      entries = await readdir(located(dir), { withFileTypes: true })
    } catch (error: any) {
      if (error?.code === 'ENOENT' || error?.code === 'ENOTDIR') return
      throw error
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const path = dir ? `${dir}/${entry.name}` : entry.name
      if (!dir && entry.name === '.git') continue
      if (entry.isDirectory()) {
        if (matcher.mayContain(path)) await walk(path)
        continue
      }
      if (!matcher.hits(path).length) continue
      if (files.length >= MAX_PINNED_FILES) {
        throw new TaskwardError('ARTIFACT_LIMIT', `The checks pin more than ${MAX_PINNED_FILES} files. Pin the files the checks trust, not whole build trees.`)
      }
      const full = located(path)
      const info = await lstat(full)
      if (info.isSymbolicLink()) {
        // The link's target text, and the content it leads to when that is a regular file: the check
        // reads the content, so an edit of the (unpinned) target is a change of the pinned file.
        const text = await readlink(full)
        let hash = `link:${text.slice(0, 4096)}`
        // A relative target inside a mounted directory is read where the check reads it (the mount's source).
        const lexical = posix.normalize(posix.join(posix.dirname(path), text))
        const reached = !isAbsolute(text) && mounts.some(({ rel }) => lexical.startsWith(`${rel}/`)) ? located(lexical) : full
        const target = await stat(reached).catch(() => undefined)
        if (target?.isFile()) {
          bytes += target.size
          if (bytes > MAX_PINNED_BYTES) {
            throw new TaskwardError('ARTIFACT_LIMIT', `The files the checks pin hold more than ${MAX_PINNED_BYTES} bytes. Pin the files the checks trust, not whole build trees.`)
          }
          const content = await sha256File(reached).catch(() => undefined)
          if (content) hash += `\0sha256:${content}`
        }
        files.push({ path, hash })
      } else if (info.isFile()) {
        bytes += info.size
        if (bytes > MAX_PINNED_BYTES) {
          throw new TaskwardError('ARTIFACT_LIMIT', `The files the checks pin hold more than ${MAX_PINNED_BYTES} bytes. Pin the files the checks trust, not whole build trees.`)
        }
        files.push({ path, hash: await sha256File(full) })
      } else files.push({ path, hash: 'special' })
    }
  }
  await walk('')
  return files
}

/** The path arguments of a tool call, as given (strings only). */
function pathArguments(args: unknown): string[] {
  if (!args || typeof args !== 'object') return []
  const found: string[] = []
  for (const key of PATH_ARGUMENTS) {
    const value = (args as Record<string, unknown>)[key]
    if (typeof value === 'string') found.push(value)
    else if (Array.isArray(value)) found.push(...value.filter((item): item is string => typeof item === 'string'))
  }
  return found
}

/**
 * The real path of `full` (absolute): its longest existing prefix resolved through symlinks, then the
 * components that do not exist yet (a new file, new directories: plain names, nothing to follow).
 */
async function existingRealPath(full: string): Promise<string> {
  const parts = full.split('/')
  for (let end = parts.length; end > 1; end--) {
    const real = await realpath(parts.slice(0, end).join('/')).catch(() => undefined)
    if (real !== undefined) return posix.normalize([real, ...parts.slice(end)].join('/'))
  }
  return full
}

/**
 * Where a tool would write, as workspace-relative paths: the path as written (normalized) and, when it
 * resolves through a symlink inside the workspace, the path it really names. An absolute path is
 * judged by `absoluteWrittenPaths`; escaping relative paths give nothing here (the file tools refuse
 * them on their own).
 */
async function writtenPaths(cwd: string, path: string): Promise<string[]> {
  if (isAbsolute(path)) return absoluteWrittenPaths(cwd, path)
  const lexical = workspaceRelative(path)
  if (lexical === undefined) return []
  const paths = [lexical]
  try {
    const root = await realpath(cwd)
    // The path as given, not lexically normalized: the file tools (and the kernel) follow a symlink
    // before the `..` after it, so `link/../x` is next to the link's target, not next to the link.
    const full = `${root}/${path.replace(/^\.\/+/, '')}`
    const real = await existingRealPath(full)
    const inside = relative(root, real).split(sep).join('/')
    const normal = workspaceRelative(inside)
    if (normal && normal !== lexical) paths.push(normal)
  } catch {
    // An unresolvable path is refused by the tool itself; the lexical path was checked.
  }
  return paths
}

/**
 * `writtenPaths` for an absolute path (DSH's file tools take them, and write anywhere): the workspace
 * path it names lexically (as given, or through the workspace's real path) and the one the kernel
 * reaches — through a symlink before a `..`, or through a link outside the workspace that leads back
 * into it. Either inside the workspace is judged; a path inside neither names nothing here.
 */
async function absoluteWrittenPaths(cwd: string, path: string): Promise<string[]> {
  const root = await realpath(cwd).catch(() => resolve(cwd))
  const within = (full: string) => [resolve(cwd), root].map((base) => relative(base, full))
    // A name that merely starts with two dots (`..env`) is inside; only `..` itself leads out.
    .find((rel) => rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
  const found = new Set<string>()
  for (const inside of [within(resolve(path)), within(await existingRealPath(path))]) {
    const normal = inside === undefined ? undefined : workspaceRelative(inside.split(sep).join('/'))
    if (normal) found.add(normal)
  }
  return [...found]
}

/**
 * The workspace files that pinned symlinks (as stamped in the baseline) lead to, each mapped to the
 * pinned link: the check reads the target, so the target is as pinned as the link.
 */
async function linkedTargets(cwd: string, baseline: readonly PinnedFile[], matcher: PinMatcher): Promise<Map<string, string>> {
  const targets = new Map<string, string>()
  const links = baseline.filter((file) => file.hash.startsWith('link:') && matcher.hits(file.path).length)
  if (!links.length) return targets
  const root = await realpath(cwd).catch(() => undefined)
  if (!root) return targets
  for (const link of links) {
    const real = await realpath(join(root, link.path)).catch(() => undefined)
    const inside = real && workspaceRelative(relative(root, real).split(sep).join('/'))
    if (inside) targets.set(inside, link.path)
  }
  return targets
}

/**
 * Pinned checks in the recovery plugin: the write guard, the baseline stamps and the per-check
 * comparison that turns a changed pin into an INCONCLUSIVE `pin_changed` result.
 */
export class PinWarden {
  constructor(private recovery: Recovery) {}

  matcher(state: RecoveryState, taskId: string): PinMatcher {
    return new PinMatcher(this.recovery.checksFor(state, taskId))
  }

  /** Stamp the task's pinned set in its workspace now and record it (callers hold the recovery lock). */
  async recordBaseline(session: Session, taskId: string, reason: PinBaselineReason, acceptanceCycle?: number) {
    const state = await this.recovery.usable(session)
    const files = await stampPinned(session.cwd, this.matcher(state, taskId))
    await this.recovery.append(session, 'pins', `${taskId}-pins-${session.seq}`, {
      taskId, files, digest: pinnedSetDigest(files), reason, ...acceptanceCycle && acceptanceCycle > 1 ? { acceptanceCycle } : {}, at: Date.now(),
    })
    return files
  }

  /**
   * The check's result when one of its pins differs in the copy the check would run in, else undefined
   * (the check runs). Without a baseline there is nothing to compare with (the caller stamps one first).
   */
  async changedResult(spec: CheckSpec, work: string, state: RecoveryState, taskId: string, mounts: readonly { rel: string, source: string }[] = []): Promise<CheckResult | undefined> {
    const baseline = state.tasks[taskId]?.pinBaseline
    if (!baseline) return undefined
    const matcher = new PinMatcher([spec])
    if (matcher.empty) return undefined
    const now = await stampPinned(work, matcher, mounts)
    const changes = comparePinnedSets(baseline.files, now, matcher)
    return changes.length ? pinChangedResult(spec, changes) : undefined
  }

  /**
   * The session whose task's pins bind `session`: itself when main, else the main session it works for
   * (a consultation shares the main session's workspace, so it is held to the same pins — and so is a
   * sub-agent it started, whose parent is the consultation).
   */
  private taskSession(session: Session): Promise<Session | undefined> {
    return mainSessionOf(this.recovery.kernel.sessions, session)
  }

  /** The write guard: a mutating tool may not name a pinned path while the session's task is live. */
  async guard(call: ToolCall) {
    if (call.tool?.readOnly) return
    const paths = pathArguments(call.args)
    if (!paths.length) return
    const owner = await this.taskSession(call.session)
    if (!owner) return
    const task = (await this.recovery.kernel.supervisor.state(owner)).current
    if (!task || !task.enabled || !LIVE.includes(task.phase)) return
    const state = this.recovery.currentState(owner) ?? await this.recovery.state(owner)
    const matcher = this.matcher(state, task.id)
    if (matcher.empty) return
    const linked = await linkedTargets(call.session.cwd, state.tasks[task.id]?.pinBaseline?.files ?? [], matcher)
    for (const path of paths) {
      for (const candidate of await writtenPaths(call.session.cwd, path)) {
        // A pinned symlink's target is what the check reads: writing it is writing the pinned file.
        const pinned = matcher.hits(candidate).length ? candidate : linked.get(candidate)
        const [hit] = pinned === undefined ? [] : matcher.hits(pinned)
        if (!hit) continue
        const through = pinned === candidate ? '' : ` (the target of the pinned symlink "${pinned}")`
        return {
          deny: {
            code: 'CHECK_PINNED',
            message: `"${candidate}"${through} is pinned by check "${hit.checkId}" (pin "${hit.pattern}") of task ${task.id}: the agent cannot change what verifies its own work. `
              + 'Change the code under test instead; only a person can change the pins (/task checks).',
          },
        }
      }
    }
  }

  /** A task state record: stamp a baseline when the task became active without one, or in a new cycle. */
  onEvent(session: Session, event: SessionEvent) {
    if (session.role !== 'main' || taskOfStateRecord(event) === undefined) return
    const task = event.data.payload as Task
    if (task.phase !== 'active') return
    this.recovery.track(this.recovery.exclusive(session, async (resolved) => {
      const state = await this.recovery.state(resolved)
      if (state.poisoned) return
      const reason = needsPinBaseline(task, state.tasks[task.id]?.pinBaseline)
      if (!reason) return
      // Tasks with no checks get a baseline too (empty): checks set later re-stamp.
      await this.recordBaseline(resolved, task.id, reason, effectiveCycle(task))
    }))
  }
}

/** Register the guard and the baseline listener. */
export function wirePins(ctx: Context, recovery: Recovery): PinWarden {
  const warden = new PinWarden(recovery)
  ctx.tools.guard((call) => warden.guard(call))
  // An observer, not a `session/event` listener: a direct call on every append (see `sessions.observe`).
  ctx.sessions.observe((session, event) => warden.onEvent(session, event))
  return warden
}
