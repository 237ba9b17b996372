import { spawnSync } from 'node:child_process'

/** The unprivileged user the suites switch to when they run as root (root reads through any mode). */
export const NOBODY = 65534

/**
 * Throws, saying why, unless `uid` can run this process's Node. A child started as that user runs
 * the suite's own Node (process.execPath), and one kept under root's mode-700 home (a version
 * manager's, a download cache's) is closed to it: the child would fail with EACCES before the case
 * under test is tried at all, and the case would fail (or skip) for a reason that is not its own.
 */
export function assertNodeRunnableBy(uid: number = NOBODY) {
  const probe = spawnSync(process.execPath, ['--version'], { uid, gid: uid, cwd: '/', stdio: 'ignore' })
  if (probe.status === 0) return
  const why = (probe.error as NodeJS.ErrnoException | undefined)?.code ?? `exit ${probe.status}`
  throw new Error(`User ${uid} cannot run this Node (${process.execPath}: ${why}), so this case cannot be tried as that user. `
    + 'Run the suite on a Node other users may execute: `node scripts/test-node.mjs` installs one (docs/testing.md, "Node versions").')
}
