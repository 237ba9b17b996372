import type { Context } from 'cordis'
import { access, constants } from 'node:fs/promises'
import { delimiter, dirname, join } from 'node:path'
import { checkSearchPath } from '@taskward/protocol'
import { storeDriver, storeHealth } from './health'
import { nodeFinding } from './node-support'
import { threadpoolFinding } from './threadpool'
import { walFlushFinding } from './wal-flushes'

export type Verdict = 'ok' | 'warn' | 'fail'

/** One line of `npm run doctor` / `/health?verbose`. Never holds a secret. */
export interface Finding {
  check: string
  verdict: Verdict
  detail: string
}

const TABLES = ['taskward_session', 'taskward_event', 'taskward_projection']

/**
 * Where `program` is on the PATH the recovery checks get (`checkSearchPath`: PATH's absolute entries,
 * else /usr/bin and /bin): a relative entry would be resolved in the check's copy of the candidate, so
 * it never counts there, and a PATH without an absolute entry is not an empty one to them.
 */
async function onPath(program: string) {
  for (const dir of checkSearchPath(process.env.PATH).split(delimiter)) {
    try {
      await access(join(dir, program), constants.X_OK)
      return join(dir, program)
    } catch {}
  }
}

async function storeFindings(ctx: Context): Promise<Finding[]> {
  const driver = storeDriver(ctx)
  if (!driver) return [{ check: 'database', verdict: 'fail', detail: 'no database is open' }]
  const findings: Finding[] = []
  if (typeof driver.path === 'string') {
    findings.push({
      check: 'data directory',
      verdict: driver.lock?.held ? 'ok' : 'fail',
      detail: `${dirname(driver.path)}; lock ${driver.lock?.file ?? '?'} ${driver.lock?.held ? `held by this host (pid ${process.pid})` : 'NOT held'}; durability ${driver.durability}`,
    })
  } else {
    findings.push({ check: 'data directory', verdict: 'ok', detail: `MySQL/MariaDB ${driver.config?.host}:${driver.config?.port}/${driver.config?.database} (several hosts may share it)` })
  }
  const health = await storeHealth(ctx)
  if (!health.ok) return [...findings, { check: 'database', verdict: 'fail', detail: `${health.code}: ${health.error}` }]
  if (typeof driver.db?.exec === 'function') {
    const quick = driver.db.exec('PRAGMA quick_check')[0]?.values.map((row: any[]) => String(row[0])).join('; ')
    const tables = new Set(driver.db.exec("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")[0]?.values.map((row: any[]) => String(row[0])) ?? [])
    const missing = [...TABLES, 'taskward_event_type'].filter((name) => !tables.has(name))
    findings.push({ check: 'database integrity', verdict: quick === 'ok' ? 'ok' : 'fail', detail: `quick_check: ${quick}` })
    findings.push({ check: 'database schema', verdict: missing.length ? 'fail' : 'ok', detail: missing.length ? `missing: ${missing.join(', ')}` : `tables ${TABLES.join(', ')} and the event type index present` })
    const flushes = walFlushFinding(driver.durability, driver.recentFlushMs?.())
    if (flushes) findings.push(flushes)
  } else {
    findings.push({ check: 'database integrity', verdict: 'ok', detail: 'the server answers (run CHECK TABLE on the server for a full check)' })
  }
  return findings
}

async function sessionFindings(ctx: Context): Promise<Finding[]> {
  const sessions = await ctx.sessions.list()
  const admission = ctx.get('admission') as any
  if (!admission?.refusal) return [{ check: 'sessions', verdict: 'warn', detail: `${sessions.length} sessions; the admission plugin is not loaded, so record versions are not checked` }]
  const findings: Finding[] = []
  for (const session of sessions) {
    const refusal = await admission.refusal(session)
    if (refusal) findings.push({ check: `session ${session.id}`, verdict: 'fail', detail: `admission refuses it: ${refusal.code}: ${refusal.message}` })
  }
  findings.unshift({
    check: 'sessions',
    verdict: findings.length ? 'fail' : 'ok',
    detail: findings.length ? `${findings.length} of ${sessions.length} sessions are refused by admission (below)` : `${sessions.length} sessions; every record version has a loaded reader`,
  })
  return findings
}

async function sandboxFinding(ctx: Context): Promise<Finding> {
  const recovery = ctx.get('recovery') as any
  const bwrap = await onPath('bwrap')
  if (!recovery?.sandbox) return { check: 'recovery sandbox', verdict: 'warn', detail: `recovery plugin not loaded; bwrap ${bwrap ? `at ${bwrap}` : 'not installed'}` }
  const choice = await recovery.sandbox()
  if (choice.kind === 'bwrap') return { check: 'recovery sandbox', verdict: bwrap ? 'ok' : 'fail', detail: bwrap ? `bubblewrap (${bwrap})` : 'sandbox: bwrap is configured but bwrap is not installed: checks will be refused' }
  return { check: 'recovery sandbox', verdict: 'warn', detail: 'copy mode: checks run in a temp copy that is NOT isolated (they can write outside it, read your files and use the network); install bubblewrap' }
}

function modelFindings(ctx: Context): Finding[] {
  const models = ctx.get('models') as any
  if (!models?.routes) return [{ check: 'models', verdict: 'warn', detail: 'no models service' }]
  return models.routes().map((route: string): Finding => {
    const adapter = models.get(route)
    const needsKey = adapter && 'apiKey' in adapter
    const keyPresent = needsKey ? !!adapter.apiKey : undefined
    return {
      check: `model route ${route}`,
      verdict: keyPresent === false ? 'fail' : 'ok',
      detail: (needsKey ? `key ${keyPresent ? 'present' : 'MISSING'}` : 'no key needed') + (typeof adapter?.describeContext === 'function' ? `; ${adapter.describeContext()}` : ''),
    }
  })
}

function pluginFindings(ctx: Context): Finding[] {
  const loader = ctx.get('loader') as any
  if (!loader?.entries) return [{ check: 'plugins', verdict: 'ok', detail: 'not loaded from cordis.yml (embedded host): no plugin rows to check' }]
  const findings: Finding[] = []
  for (const entry of loader.entries()) {
    const name = entry.options?.name ?? entry.id
    if (entry.options?.disabled) {
      findings.push({ check: `plugin ${name}`, verdict: 'ok', detail: 'disabled' })
      continue
    }
    const error = entry.fork?.error ?? entry.fork?.runtime?.error
    findings.push(error
      ? { check: `plugin ${name}`, verdict: 'fail', detail: `config or start failed: ${error.message ?? error}` }
      : { check: `plugin ${name}`, verdict: 'ok', detail: 'config valid, running' })
  }
  return findings
}

/** Everything `npm run doctor` checks, from inside a running host. */
export async function diagnose(ctx: Context): Promise<Finding[]> {
  const guard = async (check: string, run: () => Promise<Finding[]> | Finding[]) => {
    try {
      return await run()
    } catch (error: any) {
      return [{ check, verdict: 'fail' as Verdict, detail: `the check failed: ${error?.message ?? error}` }]
    }
  }
  return [
    nodeFinding(),
    threadpoolFinding(),
    ...await guard('database', () => storeFindings(ctx)),
    ...await guard('sessions', () => sessionFindings(ctx)),
    ...await guard('recovery sandbox', async () => [await sandboxFinding(ctx)]),
    ...await guard('models', () => modelFindings(ctx)),
    ...await guard('plugins', () => pluginFindings(ctx)),
  ]
}

export function formatFindings(findings: Finding[]) {
  const mark = { ok: 'OK  ', warn: 'WARN', fail: 'FAIL' }
  return findings.map((finding) => `${mark[finding.verdict]}  ${finding.check}: ${finding.detail}`).join('\n')
}
