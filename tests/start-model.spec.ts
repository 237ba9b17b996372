/* `npm start` with and without OPENAI_API_KEY: the openai row registers its routes, or stays inert. */
import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { OpenAIMock, freePort } from '@taskward/testkit'

const KEY = 'sk-start-4f5e6d7c8b-SECRET'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Start the host, wait until the openai plugin has spoken and the host answers, stop it; return the output. */
async function startOnce(env: Record<string, string | undefined>): Promise<string> {
  const data = await mkdtemp(join(tmpdir(), 'taskward-start-model-'))
  const port = await freePort()
  const childEnv: Record<string, string | undefined> = { ...process.env, PORT: String(port), TASKWARD_DATA: data }
  delete childEnv.OPENAI_API_KEY
  delete childEnv.OPENAI_BASE_URL
  delete childEnv.TASKWARD_MODEL
  Object.assign(childEnv, env)
  const child = spawn('npm', ['start', '--', '--no-demo'], {
    cwd: join(import.meta.dirname, '..'), env: childEnv as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
  })
  let output = ''
  child.stdout.on('data', (chunk) => output += chunk)
  child.stderr.on('data', (chunk) => output += chunk)
  const exited = new Promise((resolve) => child.on('exit', resolve))
  try {
    const deadline = Date.now() + 90_000
    while (!/\bopenai\b.*(model routes|is off)/.test(output) || !(await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok) {
      if (Date.now() > deadline) throw new Error(`the host did not come up:\n${output}`)
      await sleep(300)
    }
    return output
  } finally {
    try { process.kill(-child.pid!, 'SIGKILL') } catch {}
    await Promise.race([exited, sleep(5000)])
    await rm(data, { recursive: true, force: true })
  }
}

describe('npm start and the model key', function () {
  this.timeout(150_000)

  it('without OPENAI_API_KEY the openai row stays inert: one info line, no failure', async () => {
    const output = await startOnce({})
    expect(output).to.match(/openai model route "endpoint" is off: no API key/)
    expect(output).to.not.match(/CONFIG_INVALID|\[E\]/)
  })

  it('with OPENAI_API_KEY (and OPENAI_BASE_URL, TASKWARD_MODEL) it registers the route; the key is never printed', async () => {
    const mock = await OpenAIMock.start()
    try {
      const output = await startOnce({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: mock.baseURL, TASKWARD_MODEL: 'mock-start' })
      expect(output).to.match(/openai model routes: endpoint → mock-start \(role route "openai"\)/)
      expect(output).to.not.include(KEY)
      expect(output).to.not.match(/\[E\]/)
    } finally {
      await mock.close()
    }
  })
})
