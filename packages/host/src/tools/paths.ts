import { realpath } from 'node:fs/promises'
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path'
import { TaskwardError } from '@taskward/protocol'

function inside(root: string, target: string) {
  const rel = relative(root, target)
  return rel === '' || (!rel.startsWith('..' + sep) && rel !== '..' && !isAbsolute(rel))
}

/** The real path of `path`, or of its nearest existing ancestor joined with the rest (for new files). */
async function realTarget(path: string): Promise<string> {
  try {
    return await realpath(path)
  } catch (error: any) {
    if (error?.code !== 'ENOENT') throw error
    const parent = dirname(path)
    if (parent === path) return path
    return resolve(await realTarget(parent), path.slice(parent.length + 1))
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
  if (!inside(root, await realTarget(target))) throw refuse()
  return target
}
