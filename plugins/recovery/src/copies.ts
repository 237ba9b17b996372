import { realpath } from 'node:fs/promises'
import { join } from 'node:path'
import type {} from '@taskward/plugin-workspace'
import { checkResultOf, TaskwardError, type CandidateRef, type CheckResult, type CheckSpec, type RecoveryState, type SandboxKind } from '@taskward/protocol'
import { readCandidate, readCandidateOnce, readCandidatePart, readCopiedPart, samePart, type CandidateParts, type Workspace } from './candidate'
import type { Config } from './config'
import { cancelledRun } from './launcher'
import type { PinWarden } from './pins'
import { runCheck } from './runner'
import { copyEstimate, type MemoryCopies } from './memory-copies'
import { hiddenDirectories, prepareArea, removeArea, type CheckArea } from './sandbox'

/** What running the checks takes from the recovery service. */
export interface CopiesContext {
  /** The workspace service (recovery's own reference: see `Workspace`). */
  workspace: Workspace
  config: Config
  pins: PinWarden
  /** Aborted when the recovery plugin is disposed. */
  signal: AbortSignal
  /** Where a small candidate's copies go: in memory while they fit its budget. */
  memory: MemoryCopies
  logger: { warn(format: string, ...args: unknown[]): void }
}

export interface CopiesRequest {
  cwd: string
  specs: CheckSpec[]
  sandbox: SandboxKind
  state: RecoveryState
  taskId: string
  candidate: CandidateRef
  /** The candidate's part digests when it was just read (`readCandidateOnce`); absent for a rerun or in git mode. */
  parts?: CandidateParts
}

/**
 * Each check in its own fresh copy, so one check's writes cannot change what the next one sees. Each
 * copy is of `candidate`: the workspace is read again once the copy is made, and a candidate that
 * moved meanwhile refuses the run (`ARTIFACT_CHANGED`, reason `candidate-moved`) — the checks would
 * judge other files under its digest. In bubblewrap the dependency directories are mounted read-only,
 * not copied: they are the workspace's own, live, so the workspace is read once more after such a
 * check, with the same refusal. Where the candidate's parts are known, each reading is of the part that
 * matters: the copied (own) part after a copy, the mounted (dependencies) part after a check — one
 * part of ~1,000 files instead of a tree of ~24,000 on this repository.
 */
export async function runOnCopies(context: CopiesContext, request: CopiesRequest): Promise<CheckResult[]> {
  const { workspace, config, pins, signal, logger, memory } = context
  const { cwd, specs, sandbox, state, taskId, candidate } = request
  let parts = request.parts
  const results: CheckResult[] = []
  if (!specs.length) return results
  // Never copied, and hidden from a bwrap check: the data directory (the session database, tokens).
  const hidden = await hiddenDirectories()
  // A bwrap check mounts the dependency directories read-only instead of copying them.
  const dependencies = workspace.dependencies.patterns
  const source = await realpath(cwd)
  const moved = (checkId: string, when: string, now: CandidateRef) => new TaskwardError('ARTIFACT_CHANGED',
    `The workspace ${cwd} changed ${when} check ${checkId}, so the check did not judge the candidate being verified; `
    + 'nothing was recorded. Verify again once nothing writes to the workspace (a process left running, a tool call still going).',
    { reason: 'candidate-moved', checkId, candidate: candidate.digest, workspace: now.digest })
  for (const spec of specs) {
    // Disposed between two checks: the next would be killed as it started.
    if (signal.aborted) throw cancelledRun()
    let area: CheckArea
    const prepare = (base?: string) => prepareArea(cwd, config.candidateSource === 'git', hidden, dependencies, sandbox === 'bwrap', base)
    // In memory when the candidate's size is known and fits (a workspace candidate read just now).
    let slot = parts && candidate.source === 'workspace' ? memory.reserve(copyEstimate(parts, sandbox === 'bwrap'), source) : undefined
    try {
      try {
        area = await prepare(slot?.base)
      } catch (error) {
        // A copy in memory can fail where one on disk would not (the tmpfs filled meanwhile): once more there.
        if (!slot || TaskwardError.is(error)) throw error
        slot.release()
        slot = undefined
        area = await prepare()
      }
    } catch (error) {
      slot?.release()
      // The launcher itself failed (it died, or could not start): refused as an internal error like a
      // check it was running, nothing recorded — not a round of the task's (budgets, reruns).
      if (TaskwardError.is(error)) throw error
      // The copy failed: the check never ran, which proves nothing either way.
      results.push(checkResultOf(spec, { runnerError: 'runner-fault', durationMs: 0, output: `copy failed: ${(error as Error).message}` }))
      continue
    }
    try {
      if (candidate.source === 'workspace') {
        // A rerun's candidate has no parts yet: the workspace must still be it, then its parts are known.
        if (!parts) {
          const now = await readCandidateOnce(workspace, cwd, 'workspace')
          if (now.candidate.digest !== candidate.digest) throw moved(spec.id, 'while the copy was made for', now.candidate)
          parts = now.parts!
        } else if (!area.mounts.length) {
          // A copy of the whole tree (copy mode): the whole tree read again.
          const now = await readCandidateOnce(workspace, cwd, 'workspace')
          if (now.candidate.digest !== candidate.digest || !samePart(now.parts!.own, parts.own) || !samePart(now.parts!.dependencies, parts.dependencies)) {
            throw moved(spec.id, 'while the copy was made for', now.candidate)
          }
        }
        if (area.mounts.length) {
          // The copy itself holds the candidate's own part, whatever the workspace did since it was read.
          const copied = await readCopiedPart(workspace, area.work)
          if (copied.content !== parts.own.content) throw moved(spec.id, 'while the copy was made for', { digest: `copied-content:${copied.content}`, source: candidate.source })
        }
      } else {
        const now = await readCandidate(workspace, cwd, config.candidateSource)
        if (now.digest !== candidate.digest) throw moved(spec.id, 'while the copy was made for', now)
      }
      // Pinned files in a mounted directory are read where the check reads them: the workspace's.
      const mounts = area.mounts.map((rel) => ({ rel, source: join(source, rel) }))
      // A check whose pinned files differ in its copy from the task's baseline is not trusted (not run).
      const changed = await pins.changedResult(spec, area.work, state, taskId, mounts)
      if (changed) {
        results.push(changed)
        continue
      }
      const run = await runCheck(spec, area, { sandbox, outputLimitBytes: config.outputLimitBytes, hidden: sandbox === 'bwrap' ? hidden : [], workspace: cwd, mounts, workspaceReal: source, signal })
      if (area.mounts.length && parts) {
        // Mounted live: the part as the check may have read it must be the candidate's, and unwritten.
        const mounted = await readCandidatePart(workspace, cwd, 'dependencies')
        if (!samePart(mounted, parts.dependencies)) {
          throw moved(spec.id, 'while its dependency directories were mounted for', { digest: `dependencies:${mounted.digest}`, source: candidate.source })
        }
      } else if (area.mounts.length) {
        const after = await readCandidate(workspace, cwd, config.candidateSource)
        if (after.digest !== candidate.digest) throw moved(spec.id, 'while its dependency directories were mounted for', after)
      }
      results.push(checkResultOf(spec, run, { roots: area.roots }))
    } finally {
      const left = await removeArea(area)
      // A copy left in memory still takes its room there.
      if (!left) slot?.release()
      if (left) logger.warn('could not remove the copy of check %s at %s (remove it by hand): %s', spec.id, area.root, left.message)
    }
  }
  return results
}
