/* `npm run smoke:model` against the loopback mock: PASS, FAIL, and SKIPPED without a key. */
import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { OpenAIMock, taskPlayer } from '@taskward/testkit'

const KEY = 'sk-smoke-5e8d1c2b7a-SECRET'

function smoke(env: Record<string, string | undefined>): Promise<{ code: number | null, output: string }> {
  const clean = { ...process.env }
  delete clean.OPENAI_API_KEY
  delete clean.OPENAI_BASE_URL
  delete clean.TASKWARD_MODEL
  for (const [name, value] of Object.entries(env)) if (value !== undefined) clean[name] = value
  const child = spawn('npm', ['run', '--silent', 'smoke:model'], { cwd: join(import.meta.dirname, '..'), env: clean, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk) => output += chunk)
  child.stderr.on('data', (chunk) => output += chunk)
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })))
}

const lastLine = (output: string) => output.trim().split('\n').at(-1)

describe('npm run smoke:model', function () {
  this.timeout(120_000)
  let mock: OpenAIMock
  beforeEach(async () => { mock = await OpenAIMock.start() })
  afterEach(() => mock.close())

  it('without OPENAI_API_KEY: SKIPPED, exit 0, never PASS, nothing requested', async () => {
    const { code, output } = await smoke({ OPENAI_BASE_URL: mock.baseURL })
    expect(code).to.equal(0)
    expect(lastLine(output)).to.equal('SKIPPED (no OPENAI_API_KEY)')
    expect(output).to.not.include('PASS')
    expect(mock.requests).to.have.length(0)
  })

  it('against an endpoint that plays the task: PASS, exit 0, the key never printed', async () => {
    mock.fallback = taskPlayer({ plan: { acceptanceCriteria: ['hello.txt exists'], nodes: [{ id: 'hello', title: 'write hello.txt' }] } })
    const { code, output } = await smoke({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: mock.baseURL, TASKWARD_MODEL: 'mock-smoke' })
    expect(lastLine(output), output).to.equal('PASS')
    expect(code).to.equal(0)
    expect(output).to.not.include(KEY)
    expect(mock.requests.some((r) => r.body.messages[0].content.includes('You are a reviewer'))).to.equal(true)
    expect(mock.requests.every((r) => r.body.model === 'mock-smoke')).to.equal(true)
  })

  it('against an endpoint that refuses the key: FAIL with the coded reason, exit 1', async () => {
    mock.fallback = { kind: 'status', status: 401, message: `Incorrect API key provided: ${KEY}` }
    const { code, output } = await smoke({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: mock.baseURL })
    expect(code).to.equal(1)
    expect(lastLine(output)).to.match(/^FAIL: agent\/error MODEL_UNAVAILABLE: .*401/)
    expect(output).to.not.include(KEY)
    expect(output).to.not.include('PASS')
  })
})
