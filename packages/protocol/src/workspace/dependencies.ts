import { TaskwardError } from '../errors'

/**
 * Dependency directories: what a package manager installs into the workspace. They stay in the stamp
 * (a change inside one changes the digest, so a dependency cannot be patched unseen) but count against
 * limits of their own, and a bubblewrap check mounts them read-only instead of copying them.
 *
 * A pattern without `/` names a directory at any depth (`node_modules` of every package of a
 * monorepo); one with `/` is a path relative to the workspace root (`.yarn/cache`). Everything below a
 * matched directory belongs to it.
 */
export const DEFAULT_DEPENDENCY_DIRECTORIES: readonly string[] = [
  // npm, pnpm (its node_modules is mostly links into node_modules/.pnpm), yarn classic, bun
  'node_modules',
  // yarn berry: the zip cache and the unplugged packages (its .pnp.cjs is the project's own file)
  '.yarn/cache',
  '.yarn/unplugged',
  // pnpm's content store when it is kept in the project (store-dir=.pnpm-store)
  '.pnpm-store',
  // Python: virtualenvs by their usual names, PEP 582 packages, tox environments
  '.venv',
  'venv',
  '__pypackages__',
  '.tox',
  // bower
  'bower_components',
]

const SEPARATOR = 0x2f // '/'

/** Decides, walking down, which directories are dependency directories. Built once per stamp. */
export class DependencyMatcher {
  private readonly names: Set<string>
  private readonly paths: Set<string>

  constructor(patterns: readonly string[]) {
    validateDependencyPatterns(patterns)
    this.names = new Set(patterns.filter((pattern) => !pattern.includes('/')))
    this.paths = new Set(patterns.filter((pattern) => pattern.includes('/')))
  }

  /** Whether the directory `name` at `rel` (root-relative, `/`-separated bytes) is one. */
  matches(name: Uint8Array, rel: Uint8Array): boolean {
    if (this.names.size && this.names.has(latin1(name))) return true
    return this.paths.size > 0 && rel.includes(SEPARATOR) && this.paths.has(new TextDecoder().decode(rel))
  }

  /** The patterns, for a copy made elsewhere (the recovery launcher) to match the same directories. */
  get patterns(): { names: string[], paths: string[] } {
    return { names: [...this.names], paths: [...this.paths] }
  }
}

// Patterns are ASCII (validated), so comparing a name's bytes as latin1 is exact: a name with other
// bytes can never equal one.
function latin1(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes)
}

/**
 * Refuses a pattern that cannot name a directory below the root: empty, absolute, with `.`/`..` or empty
 * components, a root `.git`, or non-ASCII (`CONFIG_INVALID`, naming it).
 */
export function validateDependencyPatterns(patterns: unknown): asserts patterns is readonly string[] {
  if (!Array.isArray(patterns)) {
    throw new TaskwardError('CONFIG_INVALID', `Workspace config dependencyDirectories must be a list of directory names or root-relative paths, got ${JSON.stringify(patterns)}.`,
      { key: 'dependencyDirectories', value: patterns })
  }
  for (const pattern of patterns) {
    const parts = typeof pattern === 'string' ? pattern.split('/') : []
    const bad = typeof pattern !== 'string' || !/^[\x21-\x7e]+$/.test(pattern)
      || parts.some((part) => part === '' || part === '.' || part === '..') || parts[0] === '.git'
    if (bad) {
      throw new TaskwardError('CONFIG_INVALID',
        `Workspace config dependencyDirectories has ${JSON.stringify(pattern)}, which is not a directory name (e.g. node_modules) or a root-relative path (e.g. .yarn/cache): `
        + 'printable ASCII without spaces, no leading or trailing /, no . or .. components, nothing in the root .git. Fix the workspace plugin\'s config and reload it.',
        { key: 'dependencyDirectories', value: pattern })
    }
  }
}
