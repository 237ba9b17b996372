import { readFile, writeFile } from 'node:fs/promises'
import type { Context } from 'cordis'
import { provideService } from '@taskward/cordis-compat'
import type { DshSession } from './dsh-types'

/*
 * Why a supervised session cannot run unsupervised once the bundle is gone (rc.8 has no resume veto).
 *
 * DSH rebuilds a stored session's agent from the agent preset its log last selected (the header's
 * `agentPreset`, overridden by the last `agent-preset/selected` event — a type rc.8 knows) on every
 * cold entry point (prompt, commands, models): `agentPresets.resolve(id)` then `mount`, and a preset
 * that is unknown or whose rows do not all activate refuses the resume (`agent-preset-not-found` /
 * `agent-preset-invalid`) before any model request. So the adapter keeps a preset `taskward` in the
 * user's preset root (a copy of DSH's default preset plus ONE row, the guard below) and selects it in
 * every session it writes a record into. The guard row (`taskward-dsh/supervision-guard`, a file of the
 * bundle) injects `taskwardSupervision`, a service only the loaded adapter provides:
 *  - bundle removed: the row's package is gone, its import fails, the mount fails;
 *  - bundle's row disabled: the row never activates (cordis 4 waits for a required inject), the mount fails;
 *  - bundle loaded: the mount succeeds and the session runs supervised.
 * All of it is DSH's own code; nothing of Taskward has to run for the refusal.
 */

export const SUPERVISION_PRESET = 'taskward'
export const SUPERVISION_SERVICE = 'taskwardSupervision'
/** The bundle's guard module (scripts/dsh/pack.mjs writes it and exports it under this subpath). */
export const GUARD_MODULE = 'taskward-dsh/supervision-guard'
const GUARD_ROW = `\n# Taskward: this preset mounts only while the Taskward bundle is loaded (docs/dsh.md).\n- id: taskward-supervision-guard\n  name: ${GUARD_MODULE}\n`

/** DSH's `agentPresets` (packages/preset/agent-presets), the part used here. */
export interface DshAgentPresets {
  defaultId: string
  list(): Promise<{ id: string, path: string, trust: string }[]>
  copy(from: string, id: string, name?: string): Promise<void>
}

/**
 * Make sure the user's preset root holds `taskward` = DSH's default preset + the guard row. Returns
 * false (and selects nothing later) when this DSH composes no presets or has no writable root.
 */
export async function ensureSupervisionPreset(presets: DshAgentPresets | undefined): Promise<boolean> {
  if (!presets) return false
  let preset = (await presets.list()).find((p) => p.id === SUPERVISION_PRESET)
  if (!preset) {
    await presets.copy(presets.defaultId, SUPERVISION_PRESET, 'Taskward (supervised)')
    preset = (await presets.list()).find((p) => p.id === SUPERVISION_PRESET)
    if (!preset) return false
  }
  const text = await readFile(preset.path, 'utf8')
  if (!text.includes(`name: ${GUARD_MODULE}`)) await writeFile(preset.path, text.replace(/\n*$/, '\n') + GUARD_ROW)
  return true
}

/** The preset a DSH session resumes under (rc.8's `resolveSessionPreset`: the last selection, else the header's). */
export function sessionPreset(session: Pick<DshSession, 'header' | 'events'>): string | undefined {
  const events = session.events
  for (let seq = events.length - 1; seq >= 0; seq--) {
    if (events[seq]?.type === 'agent-preset/selected') return (events[seq].data as { agentPreset?: string })?.agentPreset
  }
  return (session.header as { agentPreset?: string }).agentPreset
}

const selected = new WeakSet<DshSession>()

/**
 * Select the supervision preset in `session` (one known DSH event), unless it already resumes under
 * it. Checked once per session object (`session.events` copies the whole log).
 */
export function selectSupervisionPreset(session: DshSession) {
  if (selected.has(session)) return
  selected.add(session)
  if (sessionPreset(session) !== SUPERVISION_PRESET) session.append('agent-preset/selected', { agentPreset: SUPERVISION_PRESET })
}

/**
 * Provide the service the guard row waits for, create the preset, then select it in every session
 * Taskward writes into. Without a preset roster (or a writable root) nothing is selected and a
 * warning says that such a DSH would reopen a supervised session unsupervised.
 */
export function guardSupervisedSessions(ctx: Context, sessions: { beforeRecord?: (session: DshSession) => void }) {
  provideService(ctx, SUPERVISION_SERVICE, { preset: SUPERVISION_PRESET })
  // An optional DSH service: cordis 4 treats every `inject` key as required.
  ;(ctx as any).inject(['agentPresets'], (presetsCtx: any) => {
    ensureSupervisionPreset(presetsCtx.agentPresets as DshAgentPresets).then((ready) => {
      if (ready) sessions.beforeRecord = selectSupervisionPreset
      else ctx.logger('taskward').warn('DSH has no writable preset root: supervised sessions are not guarded against a removed bundle (docs/dsh.md)')
    }, (error) => ctx.logger('taskward').warn('the supervision preset could not be written (supervised sessions are not guarded):', error))
    return () => { sessions.beforeRecord = undefined }
  })
}
