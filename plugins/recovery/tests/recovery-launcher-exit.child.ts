// A host that starts a long check and exits while it runs — or, with SIGKILL, is killed; with
// 'chatty', the check keeps writing and the host waits to be killed from outside (recovery-launcher.spec).
import { writeSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { prepareArea, runCheck } from '../src'
import { launcherPid } from '../src/launcher'

const [cwd, how] = process.argv.slice(2)
const area = await prepareArea(cwd, false)
const launcher = await launcherPid()
const rest = how === 'chatty' ? 'while :; do echo line; sleep 0.01; done' : 'wait'
void runCheck({ id: 'long', argv: ['sh', '-c', `sleep 60 & echo $! > child.pid; ${rest}`], timeoutMs: 120_000 }, area, { sandbox: 'copy', outputLimitBytes: 65536 })
for (;;) {
  const pid = (await readFile(join(area.work, 'child.pid'), 'utf8').catch(() => '')).trim()
  if (pid) {
    writeSync(1, `${JSON.stringify({ pid: Number(pid), area, launcher })}\n`)
    if (how === 'chatty') await new Promise(() => setInterval(() => {}, 60_000))
    // A SIGKILLed host runs no exit hook: only the launcher can end the check then.
    if (how === 'SIGKILL') process.kill(process.pid, 'SIGKILL')
    process.exit(0)
  }
  await new Promise((resolve) => setTimeout(resolve, 20))
}
