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
 * Whether a path component names a git directory: `.git` in any case, also with what a case-folding or
 * normalising file system drops (trailing dots and spaces, zero-width characters) and the 8.3 short name.
 */
export function isGitName(component: string): boolean {
  const folded = component.normalize('NFC').replace(/[\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]/g, '').replace(/[. ]+$/, '').toLowerCase()
  return folded === '.git' || folded === 'git~1'
}

/** The first component of `rel` (relative, `/`-separated) that names a git directory, if any. */
function gitComponent(rel: string): string | undefined {
  return rel.split(sep).find(isGitName)
}

export interface ResolveOptions {
  /** The path will be written: refuse anything inside a `.git` directory, directly or through a symlink. */
  write?: boolean
}

/**
 * Resolve a tool's path argument inside the session's cwd. Absolute paths, `..` escapes and symlinks
 * that lead out of the cwd are refused with `PATH_OUTSIDE_WORKSPACE`. With `write`, a path inside a `.git`
 * directory is refused with `PATH_FORBIDDEN`.
 */
export async function resolveInside(cwd: string, path: string, options: ResolveOptions = {}): Promise<string> {
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
  if (options.write && (gitComponent(relative(cwd, target)) ?? gitComponent(relative(root, real))) !== undefined) throw gitRefusal(path)
  return target
}

/**
 * Git runs what its config and hooks name: a file written into `.git` (config, hooks, info/attributes)
 * would be executed by the next `git` run in the workspace, outside any sandbox.
 */
export function gitRefusal(path: string) {
  return new TaskwardError('PATH_FORBIDDEN',
    `Path "${path}" is inside a .git directory, which the file tools never write: git would run commands planted there. Change the files of the working tree instead; the user runs git commands.`, { path })
}
