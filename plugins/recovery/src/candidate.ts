import { execFile } from 'node:child_process'
import type { Context } from 'cordis'
import { TaskwardError, type CandidateRef } from '@taskward/protocol'
import type {} from '@taskward/plugin-workspace'

/**
 * The candidate as the controller reads it — never the agent's word: the workspace stamp digest of the
 * session's cwd, or `git rev-parse HEAD` there in git mode.
 */
export async function readCandidate(ctx: Context, cwd: string, source: 'workspace' | 'git'): Promise<CandidateRef> {
  if (source === 'workspace') {
    const stamp = await ctx.workspace.stamp(cwd)
    return { digest: stamp.digest, source }
  }
  const head = await new Promise<string>((resolve, reject) => {
    execFile('git', ['rev-parse', 'HEAD'], { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 30_000 }, (error, stdout) => {
      if (error) {
        reject(new TaskwardError('ARTIFACT_UNAVAILABLE',
          `The candidate is git HEAD but "git rev-parse HEAD" failed in ${cwd} (${error.message.trim()}). Make the workspace a git repository with a commit, or set candidateSource: workspace.`))
      } else resolve(stdout.trim())
    })
  })
  if (!/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(head)) {
    throw new TaskwardError('ARTIFACT_UNAVAILABLE', `git rev-parse HEAD answered "${head}", which is not a commit id. Check the repository in ${cwd}.`)
  }
  return { digest: head, source }
}
