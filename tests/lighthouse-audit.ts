import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { Config, Result } from 'lighthouse'

const CHILD = join(import.meta.dirname, 'lighthouse-audit.child.mjs')
const run = promisify(execFile)

/**
 * One Lighthouse run of `url` in the browser listening on `port` (a plain Node child: see
 * lighthouse-audit.child.mjs), its report (LHR). The URL and the config (its headers) go to the child on
 * stdin, not its command line, which other processes can read and a failed run's error quotes; `secret`
 * (the operator token) is taken out of a failure's message, whatever the child printed.
 */
export async function lighthouseReport(url: string, port: number, config: Config, secret: string): Promise<Result> {
  // A plain Node child (no tsx loader): see lighthouse-audit.child.mjs.
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  const pending = run(process.execPath, [CHILD], { env, maxBuffer: 64 << 20 })
  pending.child.stdin!.end(JSON.stringify({ url, port, config }))
  try {
    const { stdout } = await pending
    return JSON.parse(stdout) as Result
  } catch (error: any) {
    const what = `Lighthouse failed (exit ${error?.code ?? '?'}${error?.signal ? `, ${error.signal}` : ''}): ${error?.stderr || error?.message || error}`
    throw new Error(secret ? what.replaceAll(secret, '<operator token>') : what)
  }
}
