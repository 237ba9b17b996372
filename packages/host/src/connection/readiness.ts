import type { Context, EffectScope } from 'cordis'

/** cordis' ScopeStatus (a const enum in its typings). */
const ACTIVE = 2
const FAILED = 3

export interface PluginProblem {
  /** The `cordis.yml` row id and the package name. */
  id: string
  name: string
  /** Why it is not up: its error, or the services it still waits for. */
  reason: string
}

export interface ReadinessReport {
  ready: boolean
  /** Rows that failed (a refused config, a constructor that threw, a package that cannot be imported). */
  failed: PluginProblem[]
  /** Rows not up yet (still importing, or waiting for a service). */
  pending: PluginProblem[]
}

/** The loader's view of one `cordis.yml` row (only what is read here). */
interface LoaderEntry {
  options: { id: string, name: string }
  disabled: boolean
  fork?: EffectScope & { runtime: EffectScope & { inject: Record<string, { required?: boolean }> } }
}

function errorText(error: unknown) {
  const code = (error as { code?: unknown })?.code
  const message = error instanceof Error ? error.message : String(error)
  return typeof code === 'string' ? `${code}: ${message}` : message
}

function entryProblem(entry: LoaderEntry): { failed?: string, pending?: string } | undefined {
  const fork = entry.fork
  if (!fork) return { pending: 'not loaded yet (its package is still importing, or could not be imported: see the log)' }
  if (fork.status === FAILED || fork.runtime.status === FAILED) {
    // The fork keeps the first error (e.g. the refused config) even after cordis retried the plugin.
    return { failed: errorText(fork.error ?? fork.runtime.error) }
  }
  if (fork.status === ACTIVE && fork.runtime.status === ACTIVE) return
  const missing = Object.entries(fork.runtime.inject ?? {})
    .filter(([name, inject]) => inject?.required && fork.ctx.get(name) == null)
    .map(([name]) => name)
  return { pending: missing.length ? `waiting for the service${missing.length > 1 ? 's' : ''} ${missing.join(', ')}` : 'still starting' }
}

/**
 * Whether every plugin `cordis.yml` configures is up. Under the cordis CLI that is every enabled row of
 * the loader, each of whose scopes must be active; without a loader (tests, embedding) there is nothing
 * configured to wait for. The server must listen in both cases.
 */
export function readiness(ctx: Context, listening: boolean): ReadinessReport {
  const failed: PluginProblem[] = []
  const pending: PluginProblem[] = []
  const loader = ctx.get('loader') as { entries(): Iterable<LoaderEntry> } | undefined
  for (const entry of loader?.entries() ?? []) {
    if (entry.disabled) continue
    const problem = entryProblem(entry)
    if (!problem) continue
    const { id, name } = entry.options
    if (problem.failed !== undefined) failed.push({ id, name, reason: problem.failed })
    else pending.push({ id, name, reason: problem.pending! })
  }
  if (!listening) pending.push({ id: 'server', name: '@cordisjs/plugin-server', reason: 'not listening yet' })
  return { ready: !failed.length && !pending.length, failed, pending }
}

export function describeProblems(problems: PluginProblem[]) {
  return problems.map(({ id, name, reason }) => `  - ${id} (${name}): ${reason}`).join('\n')
}
