/*
 * For recovery-launcher.spec (not a test): as the user it is started as, copy a workspace, run a check
 * that leaves its copy unremovable (a directory chmod 000 with files in it), remove the copy, and print
 * {exitCode, left (the removal's error), exists (the copy still there)} as one JSON line.
 * Usage: node --import tsx --conditions source recovery-unremovable.child.ts
 */
import { mkdtemp, readdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { prepareArea, removeArea, runCheck } from '../src'
import { stopLauncher } from '../src/launcher'

const cwd = await mkdtemp(join(tmpdir(), 'taskward-unremovable-'))
await writeFile(join(cwd, 'a.txt'), 'x')
const area = await prepareArea(cwd, false)
const run = await runCheck({ id: 'locks', argv: ['sh', '-c', 'mkdir -p locked/sub && touch locked/sub/f && chmod 000 locked'], timeoutMs: 10_000 },
  area, { sandbox: 'copy', outputLimitBytes: 4096 })
let left: string | null = null
try {
  left = (await removeArea(area))?.message ?? null
} catch (error) {
  left = `removeArea rejected: ${(error as Error).message}`
}
const exists = await readdir(area.root).then(() => true, () => false)
process.stdout.write(JSON.stringify({ exitCode: run.exitCode, left, exists, cwd }) + '\n')
await stopLauncher()
