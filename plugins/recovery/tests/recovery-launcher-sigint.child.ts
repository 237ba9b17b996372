// A host that handles Ctrl-C (DSH and the cordis CLI shut down gracefully on SIGINT) while a check runs (recovery-launcher.spec).
import { existsSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { prepareArea, removeArea, runCheck } from '../src'

process.on('SIGINT', () => writeSync(1, 'SIGINT\n'))
const area = await prepareArea(process.argv[2], false)
const running = runCheck({ id: 'slow', argv: ['sh', '-c', 'touch started; sleep 1; echo finished'], timeoutMs: 20_000 }, area, { sandbox: 'copy', outputLimitBytes: 4096 })
  .then((run) => run, (error) => ({ error: error.code, message: error.message }))
while (!existsSync(join(area.work, 'started'))) await new Promise((resolve) => setTimeout(resolve, 10))
writeSync(1, 'started\n')
const outcome = await running
await removeArea(area)
writeSync(1, `${JSON.stringify(outcome)}\n`)
