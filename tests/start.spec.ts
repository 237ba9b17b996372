import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '@taskward/testkit'

/** `npm start` for real: the cordis CLI loads cordis.yml, serves HTTP, and stops on SIGINT. */
describe('npm start', function () {
  this.timeout(120_000)

  it('boots, answers a health request, prints the login link and stops cleanly on SIGINT', async () => {
    const data = await mkdtemp(join(tmpdir(), 'taskward-start-'))
    const port = await freePort()
    const child = spawn('npm', ['start', '--', '--no-demo'], {
      cwd: join(import.meta.dirname, '..'),
      env: { ...process.env, PORT: String(port), TASKWARD_DATA: data },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let output = ''
    child.stdout.on('data', (chunk) => output += chunk)
    child.stderr.on('data', (chunk) => output += chunk)
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      const deadline = Date.now() + 90_000
      let health: Response | undefined
      while (Date.now() < deadline) {
        health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined)
        if (health?.ok && output.includes('/login?token=')) break
        await new Promise((resolve) => setTimeout(resolve, 300))
      }
      expect(health?.status, output).to.equal(200)
      expect(await health!.json()).to.deep.equal({ ok: true })
      expect(output).to.match(new RegExp(`http://127\\.0\\.0\\.1:${port}/login\\?token=[\\w-]{40,}`))
      expect((await stat(join(data, 'taskward.db'))).isFile()).to.equal(true)

      // A token-less API request is refused: the host is not open to anyone who finds the port.
      expect((await fetch(`http://127.0.0.1:${port}/login?token=wrong`)).status).to.equal(401)

      // Ctrl-C in a terminal signals the whole foreground group: npm and the start script.
      process.kill(-child.pid!, 'SIGINT')
      const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('timeout'), 20_000))])
      expect(code, output).to.not.equal('timeout')
      // The host ran its exit hooks rather than being killed.
      const deadline2 = Date.now() + 10_000
      while (!output.includes('terminated by SIGINT') && Date.now() < deadline2) await new Promise((resolve) => setTimeout(resolve, 100))
      expect(output).to.include('terminated by SIGINT')
      await new Promise((resolve) => setTimeout(resolve, 500))
      const after = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined)
      expect(after).to.equal(undefined)
    } finally {
      try { process.kill(-child.pid!, 'SIGKILL') } catch {}
      await rm(data, { recursive: true, force: true })
    }
  })
})
