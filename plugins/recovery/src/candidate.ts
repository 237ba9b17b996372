import type { Context } from 'cordis'
import {
  candidateCommit, gitCandidate, recordedCandidate, TaskwardError, type CandidateRef, type RecoveryState,
} from '@taskward/protocol'
import type { PartReading } from '@taskward/plugin-workspace'
import { runGit as git } from './git'
import { hiddenDirectories } from './sandbox'

/**
 * The workspace service itself, not read through a context: cordis' getter costs ~0.1 ms a read, and
 * a verification reads the workspace three or four times (recovery holds it as a required inject).
 */
export type Workspace = Context['workspace']

const COMMIT = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/

async function gitOrRefuse(cwd: string, args: string[]): Promise<string> {
  const outcome = await git(cwd, args)
  if (outcome.status !== 0) {
    throw new TaskwardError('ARTIFACT_UNAVAILABLE',
      `The candidate is read from git but "git ${args.join(' ')}" failed in ${cwd} (${outcome.message}). Make the workspace a git repository with a commit, or set candidateSource: workspace.`)
  }
  return outcome.stdout
}

/**
 * The candidate as the controller reads it — never the agent's word: the workspace stamp digest of the
 * session's cwd, or in git mode what the checks will see: HEAD when the working tree is clean
 * (`git status --porcelain --untracked-files=all` prints nothing), else HEAD plus the stamp digest of
 * the tree (`gitCandidate`).
 */
export async function readCandidate(workspace: Workspace, cwd: string, source: 'workspace' | 'git'): Promise<CandidateRef> {
  // The data directory inside the workspace (the default data/ of a host run there) is the host's, not
  // the candidate's: its database changes with every event, and it is never copied for a check either.
  const exclude = await hiddenDirectories()
  if (source === 'workspace') {
    const stamp = await workspace.stamp(cwd, { exclude })
    return { digest: stamp.digest, source }
  }
  const head = (await gitOrRefuse(cwd, ['rev-parse', 'HEAD'])).trim()
  if (!COMMIT.test(head)) {
    throw new TaskwardError('ARTIFACT_UNAVAILABLE', `git rev-parse HEAD answered "${head}", which is not a commit id. Check the repository in ${cwd}.`)
  }
  const status = await gitOrRefuse(cwd, ['status', '--porcelain', '--untracked-files=all'])
  if (!status.trim()) return gitCandidate(head)
  return gitCandidate(head, (await workspace.stamp(cwd, { exclude })).digest)
}

/** The part digests of a workspace candidate (see the workspace service's `read`). */
export interface CandidateParts {
  own: PartReading
  dependencies: PartReading
}

/**
 * The candidate read ONCE (in workspace mode: one capture, not a double-captured stamp), with its part
 * digests, for a verification that reads the workspace again after each copy and check and refuses a
 * candidate that moved (`runOnCopies`): every part is read twice either way, the second time where it
 * matters. In git mode the candidate is `readCandidate`'s and has no parts.
 */
export async function readCandidateOnce(workspace: Workspace, cwd: string, source: 'workspace' | 'git'): Promise<{ candidate: CandidateRef, parts?: CandidateParts }> {
  if (source === 'git') return { candidate: await readCandidate(workspace, cwd, source) }
  const reading = await workspace.read(cwd, 'all', { exclude: await hiddenDirectories() })
  return { candidate: { digest: reading.digest!, source }, parts: { own: reading.own!, dependencies: reading.dependencies! } }
}

/** One part of the workspace read again (`own` or `dependencies`). */
export async function readCandidatePart(workspace: Workspace, cwd: string, part: keyof CandidateParts): Promise<PartReading> {
  return (await workspace.read(cwd, part, { exclude: await hiddenDirectories() }))[part]!
}

/** Whether a part read again is the candidate's: the same entries and content, and no entry written since (versions). */
export function samePart(now: PartReading, then: PartReading): boolean {
  return now.digest === then.digest && now.versions === then.versions
}

/**
 * The copied part of a check's area as it is (read without the stat cache: every file hashed): its
 * content digest must be the candidate's own part's, whatever the workspace did meanwhile.
 */
export async function readCopiedPart(workspace: Workspace, work: string): Promise<PartReading> {
  return (await workspace.read(work, 'own', { cache: false }))!.own!
}

/**
 * The parent of a new attempt as observed, not assumed. In workspace mode a directory has no ancestry:
 * every candidate the controller reads is a legal successor of the authoritative one. In git mode the
 * candidate's commit must descend from the authoritative commit (`git merge-base --is-ancestor`); when
 * it does not, the parent is what git shows instead — the merge base, or none for unrelated history —
 * so `decide` rejects the candidate.
 */
export async function observedParent(state: RecoveryState, cwd: string, candidate: CandidateRef): Promise<string | undefined> {
  const authoritative = state.authoritative
  if (authoritative === undefined) return undefined
  const head = candidateCommit(candidate)
  const promoted = recordedCandidate(state, authoritative)
  // A workspace candidate (or an authoritative one recorded in workspace mode) has no ancestry to check.
  if (head === undefined || (promoted && promoted.source !== 'git')) return authoritative
  const base = promoted ? candidateCommit(promoted)! : authoritative
  const ancestry = await git(cwd, ['merge-base', '--is-ancestor', base, head])
  if (ancestry.status === 0) return authoritative
  if (ancestry.status !== 1 && !/not a valid commit|unknown revision|bad object|Not a valid/i.test(ancestry.message)) {
    throw new TaskwardError('ARTIFACT_UNAVAILABLE',
      `Cannot tell whether HEAD descends from the authoritative commit ${base}: git merge-base failed in ${cwd} (${ancestry.message}). Check the repository, then try again.`)
  }
  // Not a descendant (or the authoritative commit is not in this repository at all).
  const mergeBase = (await git(cwd, ['merge-base', base, head])).stdout.trim()
  return COMMIT.test(mergeBase) ? mergeBase : undefined
}
