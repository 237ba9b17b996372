import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, type Stats } from 'node:fs'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { TaskwardError } from '@taskward/protocol'
import { controlCharacterRefusal, gitRefusal, isGitName } from './paths'

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants
const O_CLOEXEC = (constants as Record<string, number>).O_CLOEXEC ?? 0o2000000
const DIRECTORY = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
/** Symlinks followed for one path before it counts as a loop (the kernel's limit too). */
const MAX_LINKS = 40
/** Directories a path may go through (each is held open until the file is). */
const MAX_DEPTH = 128
/** Longest path accepted (Linux's PATH_MAX). */
const MAX_PATH_BYTES = 4096

/** Times a create is retried when something else creates or removes the name meanwhile. */
const MAX_RACES = 8

export type OpenMode = 'read' | 'write' | 'edit'

/** A regular file of the cwd, opened; the caller closes `fd` (closeSync). */
export interface OpenedFile {
  fd: number
  stats: Stats
  /** Its path relative to the cwd's real path, after symlinks inside the cwd. */
  real: string
}

/**
 * The entry `name` inside the directory open as `dir`. A path through `/proc/self/fd/<n>` names the
 * very directory that descriptor holds, wherever it is now, so each step is an `openat`: nothing
 * between the check and the open is resolved by path again.
 */
function at(dir: number, name: string) {
  return `/proc/self/fd/${dir}/${name}`
}

/** lstat, or undefined when it cannot be looked at (gone, or not reachable). */
function lstatOrNone(path: string): Stats | undefined {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

function code(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException)?.code
}

/**
 * The Taskward data directory (`TASKWARD_DATA`, else ./data — plugin-database's rule) as real paths,
 * when it lies inside the session's cwd (or is it). A cwd inside the data directory (the session
 * workspaces and the demo workspace kept there) holds none of its own files: nothing to refuse.
 */
function exposedDataDirectory(root: string): string[] {
  const wanted = resolve(process.env.TASKWARD_DATA || 'data')
  let real = wanted
  try {
    real = realpathSync.native(wanted)
  } catch {}
  const data = [...new Set([wanted, real])]
  return data.some((dir) => root.startsWith(dir + sep)) ? [] : data
}

function within(path: string, dirs: readonly string[]) {
  return dirs.some((dir) => path === dir || path.startsWith(dir + sep))
}

/**
 * The session database and the operator token live in the data directory, which may lie inside a cwd
 * (a workspace root that contains it, a session in the directory the host runs from).
 */
function dataRefusal(path: string) {
  return new TaskwardError('PATH_FORBIDDEN',
    `Path "${path}" is inside Taskward's data directory (the session database and the operator token), which the file tools never read or write. `
    + 'Work on the project\'s own files.', { path })
}

/** What makes git take a directory for a repository's git directory (`is_git_directory`). */
const GIT_DIRECTORY_ENTRIES = ['HEAD', 'objects', 'refs'] as const

/**
 * Whether the directory open as `dir` is — or, once `adding` exists in it, would be — shaped like a git
 * directory: a `HEAD` file and `objects` and `refs` directories. Git runs what such a directory's config
 * and hooks name whenever it is used as a repository (an embedded bare repository, or the directory a
 * `.git` file's `gitdir:` points to), whatever its name.
 */
function gitDirectoryShaped(dir: number, adding?: string): boolean {
  for (const name of GIT_DIRECTORY_ENTRIES) {
    if (name === adding) continue
    const seen = lstatOrNone(at(dir, name))
    if (!seen || (name === 'HEAD' ? !seen.isFile() : !seen.isDirectory())) return false
  }
  return true
}

/** The kinds of file the tools refuse: anything but regular files and directories. */
function special(stats: Stats): string | undefined {
  if (stats.isFIFO()) return 'a FIFO (named pipe)'
  if (stats.isSocket()) return 'a socket'
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device'
}

/**
 * Open a file of the session's cwd for a file tool, one component at a time: every directory is opened
 * with `O_NOFOLLOW` relative to the one before it, and every symlink is read and followed here, only
 * while it stays inside the cwd. So the file checked is the file opened — a directory or symlink
 * swapped meanwhile cannot send the write elsewhere — and the opened descriptor's real path is checked
 * once more before anything is read or written.
 *
 * Refusals: outside the cwd `PATH_OUTSIDE_WORKSPACE`; inside a `.git` directory (write, edit)
 * `PATH_FORBIDDEN`; a FIFO, socket or device, or a regular file with more than one hard link
 * `FILE_UNSUPPORTED`; missing `NOT_FOUND` (read, edit); a control character in the path or a symlink loop
 * `TOOL_INVALID_ARGS`.
 * `write` creates missing directories and the file.
 *
 * Every file-system call here is synchronous: a dozen calls of a few microseconds each. Made the
 * asynchronous way, each waited for a turn of libuv's thread pool and then of the event loop: on a host
 * of 500 paced sessions a `write` took 0.3–2.7 s p50 in those waits alone, and 54 ms p50 / 0.7 s p99 with
 * only its create, write and close asynchronous; synchronous, 1.3 ms p50 / 8 ms p99 and 20 ms at most
 * (a journalling file system's commit can hold a create that long). The workspace stamp walks the same
 * directories synchronously; the flags keep every call from blocking on what it finds (O_NOFOLLOW,
 * O_NONBLOCK, O_DIRECTORY, and special files refused before an open).
 */
export async function openInside(cwd: string, path: string, mode: OpenMode): Promise<OpenedFile> {
  if (typeof path !== 'string' || !path) {
    throw new TaskwardError('TOOL_INVALID_ARGS', 'A path is required, relative to the session\'s working directory.')
  }
  const outside = () => new TaskwardError('PATH_OUTSIDE_WORKSPACE',
    `Path "${path}" is outside the session's working directory; use a relative path inside it.`, { path })
  const writing = mode !== 'read'
  const control = controlCharacterRefusal(path, 'Path', 'path')
  if (control) throw control
  if (isAbsolute(path)) throw outside()
  const tooDeep = () => new TaskwardError('TOOL_INVALID_ARGS',
    `Path "${path.slice(0, 80)}${path.length > 80 ? '…' : ''}" goes deeper than ${MAX_DEPTH} directories; the file tools do not go that deep.`, { path: path.slice(0, 200) })
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) {
    throw new TaskwardError('TOOL_INVALID_ARGS', `The path is ${Buffer.byteLength(path)} bytes long; use at most ${MAX_PATH_BYTES}.`)
  }
  if (path.split('/').filter((part) => part && part !== '.').length > MAX_DEPTH + 1) throw tooDeep()
  const lexical = relative(cwd, resolve(cwd, path))
  if (lexical === '..' || lexical.startsWith('..' + sep) || isAbsolute(lexical)) throw outside()
  if (writing && lexical.split(sep).some(isGitName)) throw gitRefusal(path)

  const root = realpathSync.native(cwd)
  const data = exposedDataDirectory(root)
  const roots = [...new Set([root, resolve(cwd)])]
  const dirs: number[] = [openSync(root, DIRECTORY)]
  const names: string[] = []
  let pending = path.split('/').filter((part) => part && part !== '.')
  let links = 0
  let races = 0
  /** The directories this call made (by their path from the root), to tell one made again. */
  const made = new Set<string>()
  let opened: number | undefined
  try {
    const follow = (entry: string) => {
      if (++links > MAX_LINKS) {
        throw new TaskwardError('TOOL_INVALID_ARGS', `Path "${path}" cannot be resolved (ELOOP); check for a symlink loop.`, { path })
      }
      const target = readlinkSync(entry)
      if (isAbsolute(target)) {
        const base = roots.find((r) => target === r || target.startsWith(r + sep))
        if (!base) throw outside()
        // Start again from the root with the target's own components.
        while (dirs.length > 1) closeSync(dirs.pop()!)
        names.length = 0
        return relative(base, target).split(sep).filter((part) => part && part !== '.')
      }
      return target.split('/').filter((part) => part && part !== '.')
    }

    while (pending.length) {
      const name = pending[0]
      const rest = pending.slice(1)
      if (name === '..') {
        if (!names.length) throw outside()
        closeSync(dirs.pop()!)
        names.pop()
        pending = rest
        continue
      }
      if (writing && isGitName(name)) throw gitRefusal(path)
      const dir = dirs.at(-1)!
      const entry = at(dir, name)
      if (rest.length) {
        // A directory on the way.
        if (dirs.length > MAX_DEPTH) throw tooDeep()
        try {
          dirs.push(openSync(entry, DIRECTORY))
          names.push(name)
          pending = rest
        } catch (error) {
          // O_NOFOLLOW with O_DIRECTORY answers ENOTDIR (or ELOOP) for a symlink.
          const link = ['ELOOP', 'ENOTDIR'].includes(code(error) ?? '') && lstatOrNone(entry)?.isSymbolicLink()
          if (link) {
            pending = [...follow(entry), ...rest]
          } else if (code(error) === 'ENOENT' && mode === 'write') {
            if (gitDirectoryShaped(dir, name)) throw gitRefusal(path)
            // Made here, then opened like any other directory (something else may take the name first).
            // A directory made once already and gone again before it was opened (another process
            // winning each time) counts as a race: it must not keep this synchronous loop, and the
            // host's thread, going.
            const making = [...names, name].join('/')
            if (made.has(making) && ++races > MAX_RACES) {
              throw new TaskwardError('TOOL_FAILED', `A directory on the way to "${path}" kept changing while it was created; try again once nothing else changes the workspace.`, { path })
            }
            made.add(making)
            try {
              mkdirSync(entry)
            } catch (e) {
              if (code(e) !== 'EEXIST') throw e
            }
          } else if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') {
            throw new TaskwardError('NOT_FOUND', `No file "${path}" in the working directory.`, { path })
          } else {
            throw error
          }
        }
        continue
      }
      // The file itself. Refuse a special file before opening it at all (an open could block or act).
      const seen = lstatSync(entry, { throwIfNoEntry: false })
      if (seen?.isSymbolicLink()) {
        pending = follow(entry)
        continue
      }
      if (seen && special(seen)) throw unsupported(path, special(seen)!)
      if (seen?.isDirectory()) throw new TaskwardError('BAD_REQUEST', `"${path}" is a directory, not a file.`, { path })
      if (!seen && mode !== 'write') throw new TaskwardError('NOT_FOUND', `No file "${path}" in the working directory.`, { path })
      // The directory the file is in, where it really is now: never inside the data directory.
      const parent = readlinkSync(`/proc/self/fd/${dir}`)
      if (within(parent, data)) throw dataRefusal(path)
      if (writing) {
        // A git directory by shape, not by name: the one the file goes into, any directory above it,
        // or the one this new file would complete.
        for (const [index, ancestor] of dirs.entries()) {
          if (gitDirectoryShaped(ancestor, index === dirs.length - 1 && !seen ? name : undefined)) throw gitRefusal(path)
        }
      }
      const flags = (mode === 'read' ? O_RDONLY : mode === 'edit' ? O_RDWR : O_WRONLY) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
      try {
        opened = seen ? openSync(entry, flags) : openSync(entry, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
      } catch (error) {
        // Swapped since the lstat (a symlink, a new or removed file): look again.
        if (['ELOOP', 'EEXIST', 'ENOENT'].includes(code(error) ?? '') && ++races <= MAX_RACES) continue
        if (code(error) === 'ENXIO') throw unsupported(path, 'a FIFO or socket')
        if (code(error) === 'EISDIR') throw new TaskwardError('BAD_REQUEST', `"${path}" is a directory, not a file.`, { path })
        throw error
      }
      names.push(name)
      pending = rest
    }
    if (opened === undefined) throw new TaskwardError('BAD_REQUEST', `"${path}" names the working directory itself, not a file.`, { path })
    const stats = fstatSync(opened)
    if (special(stats)) throw unsupported(path, special(stats)!)
    if (!stats.isFile()) throw new TaskwardError('BAD_REQUEST', `"${path}" is not a regular file.`, { path })
    if (stats.nlink > 1) {
      throw new TaskwardError('FILE_UNSUPPORTED',
        `"${path}" has ${stats.nlink} hard links: the same file may also live outside the working directory, so the file tools do not ${mode} it. `
        + 'Ask the user to replace it with a plain copy if the tools should use it.', { path, reason: 'hard-link' })
    }
    // The descriptor's own path: where the file really is now, whatever happened to the names.
    const real = readlinkSync(`/proc/self/fd/${opened}`)
    const base = roots.find((r) => real.startsWith(r + sep))
    if (!base) throw outside()
    if (within(real, data)) throw dataRefusal(path)
    if (writing && relative(base, real).split(sep).some(isGitName)) throw gitRefusal(path)
    const result = { fd: opened, stats, real: names.join('/') }
    opened = undefined
    return result
  } catch (error) {
    if (code(error) === 'ENAMETOOLONG') {
      throw new TaskwardError('TOOL_INVALID_ARGS', `Path "${path.slice(0, 80)}…" has a name longer than the file system allows (255 bytes a name).`, { path: path.slice(0, 200) })
    }
    throw error
  } finally {
    if (opened !== undefined) closeSync(opened)
    for (const dir of dirs) closeSync(dir)
  }
}

function unsupported(path: string, kind: string) {
  return new TaskwardError('FILE_UNSUPPORTED',
    `"${path}" is ${kind}, not a regular file; the file tools only read and write regular files.`, { path, reason: 'special-file' })
}
