/*
 * Child of openai-check-env.spec.ts: started with OPENAI_API_KEY in its initial environment (as `npm
 * start` would be), it runs one recovery check in the sandbox named by argv[2] that prints its own
 * environment and every process environment it can read under /proc, and prints the check's output.
 */
import { prepareArea, removeArea, runCheck } from '@taskward/plugin-recovery'
import { tempWorkspace, removeTree } from '@taskward/testkit'

const sandbox = process.argv[2] as 'bwrap' | 'copy'
const cwd = await tempWorkspace({ 'README.md': '# check\n' })
const area = await prepareArea(cwd, false)
try {
  const run = await runCheck({
    id: 'leak', argv: ['sh', '-c', 'env; for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" 2>/dev/null; done; echo END-OF-CHECK'], timeoutMs: 20_000,
  }, area, { sandbox, outputLimitBytes: 4 * 1024 * 1024 })
  process.stdout.write(run.output ?? '')
} finally {
  await removeArea(area)
  await removeTree(cwd)
}
