// The launcher's copy of a check's area (part of LAUNCHER_SOURCE, launcher-program.ts, which runs it in
// its own process with no module resolution: this is program text, and it uses that program's
// requires, `executable` and `gone`). It copies the workspace through the directories it opened, never
// following a link, mounts the dependency directories instead of copying them where asked, and refuses
// a project link that leads out of the workspace.
export const COPY_SOURCE = `
// A regular file's content and mode. Opened without following a link and without blocking, then checked
// to be a regular file still: a workspace entry listed as a file can be swapped for a FIFO (by a process
// the agent left running) before it is opened, and a blocking open of a FIFO waits for a writer for ever,
// holding one of this process's few file-system threads (every copy and removal waits behind them).
// On Linux the content is copied from the opened file itself (/proc/self/fd names it), elsewhere read.
let procFd = true
const copyRegular = async (from, to, name = from) => {
  const source = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const stats = await source.stat()
    if (!stats.isFile()) throw new Error('cannot copy ' + name + ': it is no longer a regular file (it changed while it was copied)')
    // Without /proc (not mounted) the content is read instead.
    if (process.platform === 'linux' && procFd) {
      try {
        return await copyFile('/proc/self/fd/' + source.fd, to)
      } catch (error) {
        if (error.code !== 'ENOENT' || executable('/proc/self/fd')) throw error
        procFd = false
      }
    }
    const target = await open(to, 'wx', stats.mode & 0o7777)
    try {
      const buffer = Buffer.allocUnsafe(1 << 20)
      for (;;) {
        const { bytesRead } = await source.read(buffer, 0, buffer.length, null)
        if (!bytesRead) break
        await target.write(buffer, 0, bytesRead)
      }
      await target.chmod(stats.mode & 0o7777)
    } finally {
      await target.close()
    }
  } finally {
    await source.close()
  }
}
// Directories, regular files and symbolic links (copied as links, never followed: readdir's types are
// lstat's); anything else (a FIFO, a socket, a device) fails the copy, naming it. A directory gets its
// mode once it is filled (a read-only one could not be filled).
// Each directory is opened (O_NOFOLLOW) and its entries reached through the opened directory
// (/proc/self/fd/N/name on Linux), never by their path again: a process the agent left running can swap
// a directory for a symlink to one outside the workspace (the data directory) between its listing and
// its entries' opens, and a path through it would copy that directory's files.
// With deps ({ names, paths, handles, rels }), a directory it names (a name at any depth, a path from the
// root) is not copied: it is opened (O_NOFOLLOW) through its opened parent and kept, and an empty
// directory stands in the copy where bwrap mounts it.
// The copy's file-system calls are synchronous, in slices of SLICE_MS (then one setImmediate turn, so
// the output of running checks and other requests still flow): each call costs a few microseconds
// instead of a round trip to libuv's threads, and one file takes a handful — a thousand small files took
// over a second the asynchronous way. A file larger than SMALL_FILE is copied asynchronously (it would
// hold the slice for long).
const SLICE_MS = 4
const SMALL_FILE = 1 << 20
let sliceStart = performance.now()
const pace = async () => {
  if (performance.now() - sliceStart < SLICE_MS) return
  await new Promise((resolve) => setImmediate(resolve))
  sliceStart = performance.now()
}
// copyRegular's checks, synchronously: false when the file is large (the caller copies it asynchronously).
const copySmall = (from, to, name) => {
  const source = openSync(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const stats = fstatSync(source)
    if (!stats.isFile()) throw new Error('cannot copy ' + name + ': it is no longer a regular file (it changed while it was copied)')
    if (stats.size > SMALL_FILE) return false
    if (process.platform === 'linux' && procFd) {
      try {
        copyFileSync('/proc/self/fd/' + source, to)
        return true
      } catch (error) {
        if (error.code !== 'ENOENT' || executable('/proc/self/fd')) throw error
        procFd = false
      }
    }
    const target = openSync(to, 'wx', stats.mode & 0o7777)
    try {
      const buffer = Buffer.allocUnsafe(64 * 1024)
      for (let bytesRead; (bytesRead = readSync(source, buffer, 0, buffer.length, null));) writeSync(target, buffer, 0, bytesRead)
      chmodSync(to, stats.mode & 0o7777)
    } finally {
      closeSync(target)
    }
    return true
  } finally {
    closeSync(source)
  }
}
// A link outside the dependency directories whose target leaves the workspace (absolute, or resolving
// outside it; a dangling one by its text): the stamp records its text only, so a check reading
// through it would judge files the candidate does not hold. Inside dependency directories such links
// are how packages are installed (.venv/bin/python -> /usr/bin/python3), and stay.
const leavesWorkspace = (target, opened, root, deps) => {
  if (isAbsolute(target)) return true
  // Whether a real path inside the root lies in one of its dependency directories: what a link reaches
  // there is the dependency's (links there stay, .venv/bin/python -> /usr/bin/python3), so resolving stops.
  const inDependency = (path) => {
    const parts = relative(root, path).split('/')
    if (parts[0] === '..' || isAbsolute(parts[0])) return false
    return parts.some((name, i) => deps.names.has(name) || deps.paths.has(parts.slice(0, i + 1).join('/')))
  }
  // Resolved as the kernel would, component by component from the link's real directory, as far as the
  // components exist; what does not exist yet is taken by its text.
  let current = realpathSync(dirname(opened))
  const parts = target.split('/')
  for (let i = 0; i < parts.length; i++) {
    const next = join(current, parts[i])
    if (inDependency(next)) return false
    try {
      current = realpathSync(next)
    } catch {
      current = join(current, ...parts.slice(i))
      break
    }
  }
  const rest = relative(root, current)
  return rest === '..' || rest.startsWith('../') || isAbsolute(rest)
}
const copyTree = async (from, to, skipGit, exclude, at = from, deps, rel = '', inDependency = false, root = from) => {
  // Past PATH_MAX the old path walk failed (ENAMETOOLONG); through descriptors only the fds would bound it.
  if (Buffer.byteLength(from) >= 4096) throw new Error('cannot copy ' + from + ': its path is too long')
  let dir
  try {
    dir = openSync(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  } catch (error) {
    // A directory swapped for a symlink (or a file) while it was copied: a changing workspace, refused.
    if (error.code === 'ELOOP' || error.code === 'ENOTDIR') throw new Error('cannot copy ' + from + ': it is no longer a directory (it changed while it was copied)')
    throw error
  }
  try {
    const stats = fstatSync(dir)
    const base = process.platform === 'linux' && procFd && executable('/proc/self/fd') ? '/proc/self/fd/' + dir : at
    mkdirSync(to, { mode: 0o700 })
    for (const entry of readdirSync(base, { withFileTypes: true })) {
      await pace()
      // The host is gone: the copy is being removed (hostGone), no use making more of it.
      if (gone) throw new Error('the host is gone')
      if (skipGit && entry.name === '.git') continue
      const source = join(from, entry.name)
      if (exclude.has(source)) continue
      const target = join(to, entry.name)
      const opened = join(base, entry.name)
      const entryRel = rel ? rel + '/' + entry.name : entry.name
      const dependency = inDependency || (deps !== undefined && entry.isDirectory() && (deps.names.has(entry.name) || deps.paths.has(entryRel)))
      if (dependency && !inDependency && deps.mount) {
        const handle = await open(opened, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch((error) => {
          if (error.code === 'ELOOP' || error.code === 'ENOTDIR') throw new Error('cannot mount ' + source + ': it is no longer a directory (it changed while it was copied)')
          throw error
        })
        deps.handles.push(handle)
        deps.rels.push(entryRel)
        mkdirSync(target, { mode: 0o700 })
      } else if (entry.isDirectory()) await copyTree(source, target, false, exclude, opened, deps, entryRel, dependency, root)
      else if (entry.isSymbolicLink()) {
        const link = readlinkSync(opened)
        // Only for a caller that names the dependency directories (recovery always does).
        if (deps && !dependency && leavesWorkspace(link, opened, root, deps)) {
          throw new Error('cannot copy ' + source + ': it is a symbolic link to ' + link + ', outside the workspace, and a check reading through it would judge files '
            + 'the candidate does not hold (a stamp records a link by its target text only); replace it with what it points to, or keep it in a dependency directory '
            + '(a dependency directory must be a directory of the workspace, not itself a link)')
        }
        symlinkSync(link, target)
      }
      else if (entry.isFile()) {
        if (!copySmall(opened, target, source)) await copyRegular(opened, target, source)
      } else throw new Error('cannot copy ' + source + ': only regular files, directories and symbolic links are copied, and this is a '
        + (entry.isFIFO() ? 'FIFO' : entry.isSocket() ? 'socket' : 'device') + '; remove it from the workspace (the checks cannot run on it)')
    }
    chmodSync(to, stats.mode & 0o7777)
  } finally {
    closeSync(dir)
  }
}

`
