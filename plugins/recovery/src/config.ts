import Schema from 'schemastery'
import { BudgetsSchema, CheckSpecSchema, SettlePolicySchema, type SettlePolicy, configInvalid, strictConfig, unpassableArgument, validatePins, type Budgets, type CheckSpec } from '@taskward/protocol'

export interface Config {
  /** Controller-owned checks (argv, never a shell string). `[]` means validation is MISSING. */
  checks: CheckSpec[]
  /**
   * `auto` (default): bubblewrap where `bwrap` is installed, else `copy` with a warning at start.
   * `copy`: a temp copy with a scrubbed environment (not isolation). `bwrap`: the copy inside
   * bubblewrap, refused where it is missing.
   */
  sandbox: 'auto' | 'copy' | 'bwrap'
  /** Where the candidate's identity comes from: the workspace stamp, or `git rev-parse HEAD`. */
  candidateSource: 'workspace' | 'git'
  budgets: Budgets
  /** Bytes of a check's output kept (head and tail) while it runs. */
  outputLimitBytes: number
  /** How a stage's background verification that lost the race with a write waits and retries. */
  settle: SettlePolicy
  /** Bytes the checks' copies in memory (/dev/shm) may take at once by their estimate; 0: every copy in the temp directory. */
  memoryCopyBytes: number
}

export const Config: Schema<Partial<Config>, Config> = strictConfig('recovery', Schema.object({
  checks: Schema.array(CheckSpecSchema).default([])
    .description('Checks run against a copy of the candidate: [{id, argv: ["npm", "test"], timeoutMs}]. Empty means unverified.'),
  sandbox: Schema.union(['auto', 'copy', 'bwrap'] as const).default('auto')
    .description('auto and bwrap: the copy inside bubblewrap, no network; checks are refused where bubblewrap is missing (auto never falls back to copy). copy: a temp copy with a scrubbed environment, explicitly not isolation (a check can read the host environment through /proc).'),
  candidateSource: Schema.union(['workspace', 'git'] as const).default('workspace')
    .description('The candidate identity: the workspace stamp digest, or git HEAD.'),
  budgets: BudgetsSchema,
  outputLimitBytes: Schema.natural().min(1024).default(64 * 1024)
    .description('Bytes of check output kept while it runs (the head and the tail).'),
  settle: SettlePolicySchema,
  memoryCopyBytes: Schema.natural().default(128 * 1024 * 1024)
    .description('Checks\' copies of a small candidate are made in memory (/dev/shm, a tmpfs) while all copies there at once take at most this many bytes (the candidate\'s file bytes plus 4 KiB an entry); larger or further copies go to the temp directory. What a check writes into its copy is in memory too. 0: every copy in the temp directory.'),
}) as Schema<Partial<Config>, Config>, { check: checkChecks })

/**
 * What the schema cannot say about `checks`: a runnable argv[0], ids used once, and pins that pin
 * something — validated and normalized as `/task checks` does (`./test/**` → `test/**`; a negation or a
 * path leaving the workspace is refused), since a glob minimatch never matches would pin nothing, silently.
 */
function checkChecks(config: Config) {
  const seen = new Map<string, number>()
  config.checks.forEach((check, index) => {
    if (check.pin !== undefined) {
      try {
        check.pin = validatePins(check.pin, check.id)
      } catch (error) {
        throw configInvalid('recovery', ['checks', index, 'pin'], check.pin, (error as Error).message)
      }
    }
    if (!check.argv.length || !check.argv[0]) {
      throw configInvalid('recovery', ['checks', index, 'argv'], check.argv,
        'argv must be a non-empty array whose first element names the program, e.g. ["npm", "test"] (checks never run through a shell)')
    }
    const nul = unpassableArgument(check.argv)
    if (nul >= 0) {
      throw configInvalid('recovery', ['checks', index, 'argv', nul], check.argv[nul],
        'an argument holds a NUL byte, which no program can receive; remove it')
    }
    const first = seen.get(check.id)
    if (first !== undefined) {
      throw configInvalid('recovery', ['checks', index, 'id'], check.id, `checks[${first}] has the same id; give every check its own id`)
    }
    seen.set(check.id, index)
  })
}
