import { lstat, mkdir, realpath, stat } from 'node:fs/promises'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { TaskwardError } from '@taskward/protocol'
import { isGitName } from '../tools/paths'

/*
 * Where an operator may start a session. A requested directory must lie inside one of the configured
 * workspace roots after every symlink is resolved: a link inside a root that leads out of it, an
 * absolute path elsewhere and `..` segments are all PATH_OUTSIDE_WORKSPACE. Nothing is created
 * unless asked, and then only below a checked, existing ancestor, one directory at a time.
 */

function inside(root: string, path: string) {
  const rel = relative(root, path)
  // `..` as the first component, not as a prefix: `..cache` is a directory inside the root.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
}

function outside(requested: string, roots: readonly string[]) {
  return new TaskwardError('PATH_OUTSIDE_WORKSPACE',
    `${requested} is not inside a workspace root (${roots.join(', ')}); pick a directory under one of them or add a root to operator.workspaceRoots.`,
    { field: 'cwd' })
}

/** Create the roots (they must exist to be resolved) and return their real paths. */
export async function prepareRoots(roots: readonly string[]): Promise<string[]> {
  const real: string[] = []
  for (const root of roots) {
    try {
      await mkdir(root, { recursive: true })
      real.push(await realpath(root))
    } catch (error: any) {
      // Every session creation answers with this until the config is fixed: coded, naming the root.
      throw new TaskwardError('CONFIG_INVALID',
        `Workspace root ${root} cannot be created or read (${error?.code ?? error?.message ?? error}); fix operator.workspaceRoots and restart.`,
        { key: 'operator.workspaceRoots', root })
    }
  }
  return real
}

function insideGit(requested: string) {
  return new TaskwardError('PATH_FORBIDDEN',
    `cwd: ${requested} is inside a .git directory; a session there could write hooks and config that git runs. Pick the repository's working tree instead.`,
    { field: 'cwd' })
}

async function exists(path: string) {
  return lstat(path).then(() => true, (error) => {
    if (error?.code === 'ENOENT') return false
    throw error
  })
}

/**
 * The real path of `requested` (absolute, or relative to the first root) if it lies inside one of
 * `roots` (real paths). `create` makes a missing directory (and missing parents).
 */
export async function resolveWorkspaceDirectory(roots: readonly string[], requested: string, create = false): Promise<string> {
  try {
    return await resolveInside(roots, requested, create)
  } catch (error: any) {
    // File system refusals on the way (a link loop, a file where a directory should be, a link to
    // nowhere) are the request's fault: coded, naming the field, never a 500.
    const reason = FS_REASONS[error?.code]
    if (reason) throw new TaskwardError('BAD_REQUEST', `cwd: ${requested} ${reason}`, { field: 'cwd' })
    throw error
  }
}

const FS_REASONS: Record<string, string> = {
  ELOOP: 'runs into a symlink loop.',
  ENOTDIR: 'passes through something that is not a directory.',
  ENOENT: 'is a symlink to nothing (or changed while it was checked).',
  EACCES: 'cannot be read by the host (permission denied).',
  EPERM: 'cannot be created here (operation not permitted).',
  ENAMETOOLONG: 'is too long.',
}

async function resolveInside(roots: readonly string[], requested: string, create: boolean): Promise<string> {
  if (!roots.length) throw new TaskwardError('CONFIG_INVALID', 'No workspace roots are configured (operator.workspaceRoots); sessions cannot be created over HTTP.')
  if (requested.includes('\0')) throw new TaskwardError('BAD_REQUEST', 'cwd: must not contain NUL characters.', { field: 'cwd' })
  // `..` never has a good reason here and only serves to confuse checks: refuse it outright.
  if (requested.split(/[\\/]+/).includes('..')) throw outside(requested, roots)
  if (requested.split(/[\\/]+/).some(isGitName)) throw insideGit(requested)
  // Only real paths decide (below): a configured root may itself be reached through a link.
  const lexical = resolve(roots[0], requested)

  if (await exists(lexical)) return checkedDirectory(roots, requested, lexical)
  if (!create) {
    throw new TaskwardError('NOT_FOUND', `cwd: ${requested} does not exist; send {"create": true} to create it inside the workspace root.`, { field: 'cwd' })
  }
  // Find the deepest existing ancestor, check where it really is, then create downwards from there.
  const missing: string[] = []
  let base = lexical
  while (!(await exists(base))) {
    const parent = resolve(base, '..')
    missing.unshift(base.slice(parent.length).replace(new RegExp(`^\\${sep}`), ''))
    base = parent
  }
  let current = await realpath(base)
  const root = roots.find((candidate) => inside(candidate, current))
  if (root === undefined) throw outside(requested, roots)
  if (relative(root, current).split(sep).some(isGitName)) throw insideGit(requested)
  for (const name of missing) {
    const next = join(current, name)
    await mkdir(next).catch((error) => {
      if (error?.code !== 'EEXIST') throw error
    })
    // A link planted in between would be followed by realpath and caught here.
    current = await realpath(next)
    if (!roots.some((root) => inside(root, current))) throw outside(requested, roots)
  }
  return checkedDirectory(roots, requested, current)
}

async function checkedDirectory(roots: readonly string[], requested: string, path: string) {
  const real = await realpath(path)
  const root = roots.find((candidate) => inside(candidate, real))
  if (root === undefined) throw outside(requested, roots)
  // Also through a link: only the real path's components below the root count.
  if (relative(root, real).split(sep).some(isGitName)) throw insideGit(requested)
  if (!(await stat(real)).isDirectory()) throw new TaskwardError('BAD_REQUEST', `cwd: ${requested} is not a directory.`, { field: 'cwd' })
  return real
}
