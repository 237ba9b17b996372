import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkPath } from './sandbox'

/** What one git run ended with; a non-zero exit is an outcome, not an exception. */
export interface GitOutcome {
  /** Exit status (0 on success, -1 when git could not be run or was killed). */
  status: number
  stdout: string
  message: string
}

/**
 * Settings that name a program git would run. The repository's own config (`.git/config`, its
 * includes, `config.worktree`) is written by whoever controls the workspace — in Taskward possibly a
 * model — so every one of them is overridden at command-line scope, which outranks every file.
 */
const NEUTRAL: [string, string][] = [
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['core.pager', 'cat'],
  ['core.editor', 'false'],
  ['core.askPass', ''],
  ['core.sshCommand', 'false'],
  ['core.gitProxy', ''],
  ['core.attributesFile', '/dev/null'],
  ['core.alternateRefsCommand', ''],
  ['sequence.editor', 'false'],
  // `false` (not empty: an empty command is still run) so a diff that would use it fails loudly instead.
  ['diff.external', 'false'],
  ['credential.helper', ''],
  ['gpg.program', 'false'],
  ['gpg.ssh.program', 'false'],
  ['gpg.x509.program', 'false'],
  ['log.showSignature', 'false'],
  ['uploadpack.packObjectsHook', ''],
  ['protocol.allow', 'never'],
  ['submodule.recurse', 'false'],
  // A directory holding HEAD, config, objects/ and refs/ would otherwise be taken for a bare repository.
  ['safe.bareRepository', 'explicit'],
]

/**
 * Driver settings, keyed by a name that `.gitattributes` (which the workspace controls) selects. An
 * empty filter command is no filter; diff and merge drivers are pointed at `false` instead (an empty
 * one would still be run), so a command that needs one fails instead of running the planted program.
 */
const FILTER_DRIVER = /^filter\..+\.(?:clean|smudge|process)$/s
const OTHER_DRIVER = /^(?:diff\..+\.(?:textconv|command)|merge\..+\.driver)$/s
/** Subcommands that may show diffs: never through an external diff or a textconv program. */
const DIFFING = new Set(['diff', 'log', 'show', 'whatchanged', 'format-patch', 'diff-files', 'diff-index', 'diff-tree'])
const REQUIRED_FILTER = /^(filter\..+)\.(?:clean|smudge|process)$/s

function run(cwd: string, args: string[], env: Record<string, string>): Promise<GitOutcome> {
  return new Promise((resolve) => {
    execFile('git', ['--no-pager', ...args], { cwd, env, timeout: 30_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code
      const status = error ? (typeof code === 'number' ? code : -1) : 0
      resolve({ status, stdout: String(stdout), message: String(stderr || error?.message || '').trim() })
    })
  })
}

/** Command-line scope config as environment (exact keys: no `-c name=value` parsing of odd names). */
function configEnv(pairs: [string, string][]): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(pairs.length) }
  pairs.forEach(([key, value], index) => {
    env[`GIT_CONFIG_KEY_${index}`] = key
    env[`GIT_CONFIG_VALUE_${index}`] = value
  })
  return env
}

/**
 * Run git in `cwd` so that nothing the repository controls is executed: no system or global config,
 * an empty temp HOME, no pager, no prompts, no optional index writes (and so no post-index-change
 * hook), every program-naming setting neutralised (`NEUTRAL`), and every filter/diff/merge driver the
 * repository's config defines blanked (an empty driver command is no driver). The environment is built
 * from scratch: only PATH passes from the host (its absolute entries: `checkPath`). Every `git` the host runs goes through here.
 */
export async function runGit(cwd: string, args: string[]): Promise<GitOutcome> {
  const home = await mkdtemp(join(tmpdir(), 'taskward-git-home-'))
  try {
    const base: Record<string, string> = {
      // Its absolute entries outside the workspace only: git runs there, where a relative entry, or one
      // inside it, would find the agent's files.
      PATH: checkPath(undefined, cwd),
      HOME: home,
      XDG_CONFIG_HOME: home,
      LANG: 'C',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_PAGER: 'cat',
      PAGER: 'cat',
      GIT_OPTIONAL_LOCKS: '0',
      GIT_ATTR_NOSYSTEM: '1',
      GIT_NO_REPLACE_OBJECTS: '1',
      GIT_PROTOCOL_FROM_USER: '0',
    }
    // Reading config runs nothing; it lists which drivers the repository defines (outside one: none).
    const listed = await run(cwd, ['config', '--list', '--name-only', '-z'], { ...base, ...configEnv(NEUTRAL) })
    const names = listed.status === 0 ? listed.stdout.split('\0').filter(Boolean) : []
    const filters = names.filter((name) => FILTER_DRIVER.test(name))
    const required = [...new Set(filters.map((name) => REQUIRED_FILTER.exec(name)?.[1]).filter((name): name is string => !!name))]
    const pairs: [string, string][] = [
      ...NEUTRAL,
      ...filters.map((name): [string, string] => [name, '']),
      ...required.map((name): [string, string] => [`${name}.required`, 'false']),
      ...names.filter((name) => OTHER_DRIVER.test(name)).map((name): [string, string] => [name, 'false']),
    ]
    const command = DIFFING.has(args[0]) ? [args[0], '--no-ext-diff', '--no-textconv', ...args.slice(1)] : args
    return await run(cwd, command, { ...base, ...configEnv(pairs) })
  } finally {
    await rm(home, { recursive: true, force: true })
  }
}
