// A host process that starts a long check and exits while it runs — or, with SIGKILL, is killed (recovery-launcher.spec).
import { writeSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { prepareArea, runCheck } from '../src'

const [cwd, how] = process.argv.slice(2)
const area = await prepareArea(cwd, false)
void runCheck({ id: 'long', argv: ['sh', '-c', 'sleep 60 & echo $! > child.pid; wait'], timeoutMs: 120_000 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
for (;;) {
  const pid = (await readFile(join(area.work, 'child.pid'), 'utf8').catch(() => '')).trim()
  if (pid) {
    writeSync(1, JSON.stringify({ pid: Number(pid), area }))
    // A SIGKILLed host runs no exit hook: only the launcher can end the check then.
    if (how === 'SIGKILL') process.kill(process.pid, 'SIGKILL')
    process.exit(0)
  }
  await new Promise((resolve) => setTimeout(resolve, 20))
}
