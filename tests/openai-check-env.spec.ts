/* The model key never reaches a recovery check: not in its environment, not in any /proc it can read. */
import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { join } from 'node:path'

const KEY = 'sk-check-env-91b2c3d4e5-SECRET'

function child(sandbox: string): Promise<string> {
  const proc = spawn(process.execPath, ['--import', 'tsx', '--conditions', 'source', join(import.meta.dirname, 'openai-check-env.child.ts'), sandbox], {
    env: { ...process.env, OPENAI_API_KEY: KEY }, stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  proc.stdout.on('data', (chunk) => output += chunk)
  proc.stderr.on('data', (chunk) => output += chunk)
  return new Promise((resolve) => proc.on('exit', () => resolve(output)))
}

describe('the model key and recovery checks', function () {
  this.timeout(60_000)

  it('a check in the bubblewrap sandbox sees neither the key in its environment nor the host\'s environment under /proc', async () => {
    const output = await child('bwrap')
    expect(output, output).to.include('END-OF-CHECK')
    expect(output).to.match(/^PATH=/m)
    expect(output).to.not.include(KEY)
  })

  it('the probe can fail: in the unisolated copy sandbox the same check finds the key under /proc (why docs/models.md says use bwrap)', async () => {
    const output = await child('copy')
    expect(output, output).to.include('END-OF-CHECK')
    expect(output).to.include(KEY)
  })
})
