import { lstat, readlink, realpath } from 'node:fs/promises'
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path'
import { TaskwardError } from '@taskward/protocol'

function inside(root: string, target: string) {
  const rel = relative(root, target)
  return rel === '' || (!rel.startsWith('..' + sep) && rel !== '..' && !isAbsolute(rel))
}

/**
 * The real path of `path`, or of its nearest existing ancestor joined with the rest (for new files).
 * A dangling symlink is followed to where it points: writing through it would create that file.
 */
async function realTarget(path: string, depth = 0): Promise<string> {
  try {
    return await realpath(path)
  } catch (error: any) {
    if (error?.code !== 'ENOENT') throw error
    const link = await lstat(path).catch(() => undefined)
    if (link?.isSymbolicLink()) {
      if (depth > 40) throw Object.assign(new Error(`too many symlinks at ${path}`), { code: 'ELOOP' })
      return realTarget(resolve(dirname(path), await readlink(path)), depth + 1)
    }
    const parent = dirname(path)
    if (parent === path) return path
    return resolve(await realTarget(parent, depth), path.slice(parent.length + 1))
  }
}

/**
 * Resolve a tool's path argument inside the session's cwd. Absolute paths, `..` escapes and symlinks
 * that lead out of the cwd are refused with `PATH_OUTSIDE_WORKSPACE`.
 */
export async function resolveInside(cwd: string, path: string): Promise<string> {
  if (typeof path !== 'string' || !path) {
    throw new TaskwardError('TOOL_INVALID_ARGS', 'A path is required, relative to the session\'s working directory.')
  }
  const refuse = () => new TaskwardError('PATH_OUTSIDE_WORKSPACE',
    `Path "${path}" is outside the session's working directory; use a relative path inside it.`, { path })
  if (isAbsolute(path)) throw refuse()
  const target = resolve(cwd, path)
  if (!inside(cwd, target)) throw refuse()
  const root = await realpath(cwd)
  let real: string
  try {
    real = await realTarget(target)
  } catch (error: any) {
    throw new TaskwardError('TOOL_INVALID_ARGS', `Path "${path}" cannot be resolved (${error?.code ?? error}); check for a symlink loop.`, { path })
  }
  if (!inside(root, real)) throw refuse()
  return target
}
