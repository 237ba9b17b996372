import { expect } from 'chai'
import type { Context } from 'cordis'
import type { Browser, Page } from 'playwright-core'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import type { ModelRequest, ModelStep, Session } from '@taskward/host'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { EventTypes } from '@taskward/protocol'
import { WebConsole } from '../plugins/console/src'
import { bootDemoHost, launchBrowser, openSession, screenshot, until, type DemoHost } from './console-fixtures'
import { bootOperatorHost, createSession, type OperatorHost } from './operator-fixtures'

const AXE_SOURCE = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core's violations on the page (injected through the DevTools protocol: the page's CSP stays on). */
export async function axeViolations(page: Page) {
  await page.evaluate(await AXE_SOURCE)
  const result = await page.evaluate('axe.run(document, { resultTypes: ["violations"] })') as
    { passes: unknown[], violations: { id: string, help: string, nodes: { target: string[] }[] }[] }
  if (!result.passes.length) throw new Error('axe checked nothing: is the page empty?')
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join('; ')})`)
}

/** One node, one file: enough for a whole supervised task. */
const PLAN = { acceptanceCriteria: ['greeting.txt says hello'], nodes: [{ id: 'greet', title: 'Write greeting.txt' }] }

/** The seq of the recorded result of `callId`. */
async function resultSeq(session: Session, callId: string) {
  const events = await session.read({ from: Math.max(0, session.seq - 20), limit: 20 })
  return events.findLast((e) => e.type === EventTypes.toolResult && e.data?.callId === callId)?.seq
}

/**
 * The main agent's policy (a function of the task, like the console demo's), served through a route
 * that streams each step's text in two deltas; the first streamed text waits for `gate` between them,
 * so the test can see it arrive before the step is recorded.
 */
function supervisedModel(gate: Promise<void>) {
  let gated = false
  return {
    name: 'test-supervised-model',
    inject: ['models', 'supervisor'],
    apply(ctx: Context) {
      const policy = async (request: ModelRequest): Promise<ModelStep> => {
        const task = (await ctx.supervisor.state(request.session)).current
        if (!task) return {}
        if (request.step > 0) {
          const last = request.results.at(-1)
          if (last?.name === 'write' && !last.error) {
            const seq = await resultSeq(request.session, last.callId)
            return { toolCalls: [{ name: 'task_report_stage', args: { nodeId: 'greet', summary: 'Wrote greeting.txt.', evidenceSeqs: [seq] } }] }
          }
          return {}
        }
        if (task.phase === 'planning') return { text: 'Planning the greeting.', toolCalls: [{ name: 'task_submit_plan', args: structuredClone(PLAN) }] }
        if (task.phase !== 'active') return {}
        const run = task.nodeRuns.greet
        const write = { name: 'write', args: { path: 'greeting.txt', content: 'hello\n' } }
        if (run.status === 'running') return { text: 'Writing the file.', toolCalls: [write] }
        if (run.status === 'pending' || run.status === 'needs-revision') {
          return { text: 'Starting the node.', toolCalls: [{ name: 'task_start_node', args: { nodeId: 'greet' } }, write] }
        }
        if (run.status === 'passed') return { text: 'Asking for final acceptance.', toolCalls: [{ name: 'task_request_completion', args: { summary: 'greeting.txt written.' } }] }
        return {}
      }
      ctx.models.register('test-supervised', {
        async step(request) {
          const step = await policy(request)
          if (step.text) {
            request.onText?.(step.text.slice(0, 8))
            if (!gated) {
              gated = true
              await gate
            }
            request.onText?.(step.text.slice(8))
          }
          return { ...step, usage: { promptTokens: 10, completionTokens: 5, cachedTokens: 4 } }
        },
      })
      const verdict = (request: ModelRequest): ModelStep => {
        const parent = request.session.parentId
        return { toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass', findings: [`Looks right (${parent.slice(0, 4)}).`], evidenceSeqs: [] } }] }
      }
      ctx.models.scripted.script('reviewer', Array.from({ length: 10 }, () => verdict))
    },
  }
}

describe('console: the operator drives a session in the browser', function () {
  this.timeout(90_000)
  let browser: Browser
  let op: OperatorHost
  let page: Page
  let openGate: () => void

  before(async () => {
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
  })
  beforeEach(async () => {
    const gate = new Promise<void>((resolve) => openGate = resolve)
    op = await bootOperatorHost([[WorkspacePlugin], [SupervisorPlugin, {}], [WebConsole, { demo: false }], [supervisedModel(gate)]], ['supervisor', 'webConsole'])
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
  })
  afterEach(async () => {
    openGate()
    await page?.close()
    await op?.dispose()
  })

  const login = (next = '/') => page.goto(`${op.host.ctx.connection.loginUrl}&next=${encodeURIComponent(next)}`)
  const phase = () => page.getAttribute('#current [data-phase]', 'data-phase')

  it('creates a session, runs /task new with streamed text, approves the plan with its button and sees the task complete', async () => {
    await login()
    await page.waitForSelector('#new-session')
    expect(await axeViolations(page)).to.deep.equal([])
    expect(await page.locator('#new-model option').allTextContents()).to.include.members(['scripted (default)', 'test-supervised'])
    await page.fill('#new-cwd', 'greeting')
    await page.selectOption('#new-model', 'test-supervised')
    await screenshot(page, 'new-session')
    await page.click('#new-session button[type="submit"]')
    await page.waitForURL(/\/sessions\//)
    await page.waitForSelector('#conversation')
    const sessionId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
    const session = await op.host.ctx.sessions.get(sessionId)
    expect(session.cwd).to.equal(join(op.root, 'greeting'))
    await until(async () => (await page.textContent('#live')) === 'live', 'the event stream to connect')
    expect(await axeViolations(page)).to.deep.equal([])

    await page.fill('#input-text', '/task new Write a greeting file')
    await page.click('#send')
    // The first model step streams "Planning" and waits: the page shows it before anything is recorded.
    await page.waitForSelector('#transcript [data-streaming] .text')
    expect(await page.textContent('#transcript [data-streaming] .text')).to.equal('Planning')
    expect((await session.read({ limit: 1000 })).some((e) => e.type === 'assistant/message')).to.equal(false)
    openGate()
    await page.waitForSelector('#transcript .msg.assistant[data-seq]')
    expect(await page.textContent('#transcript .msg.assistant[data-seq] .text')).to.equal('Planning the greeting.')
    expect(await page.locator('#transcript [data-streaming]').count()).to.equal(0)
    expect(await page.textContent('#transcript .msg.reply')).to.include('the agent plans it')
    await page.waitForSelector('#transcript details.tool[data-tool="task_submit_plan"] .tool-status[data-status="ok"]')

    await page.waitForSelector('#approve-plan')
    expect(await phase()).to.equal('awaiting-approval')
    await screenshot(page, 'approve-plan')
    expect(await axeViolations(page)).to.deep.equal([])
    // A draft in the input box survives the button's command.
    await page.fill('#input-text', 'a draft I am still writing')
    await page.click('#approve-plan')
    // "Sending…" shows first; wait for the command's own answer (no race with a slow reply).
    await until(async () => /Plan approved|refused/i.test(await page.textContent('#input-status') ?? ''), 'the approval reply')
    expect(await page.textContent('#input-status')).to.include('Plan approved')
    expect(await page.inputValue('#input-text')).to.equal('a draft I am still writing')
    await until(async () => await phase() === 'complete', 'the task to complete', 30_000)
    expect(await page.locator('#approve-plan').count()).to.equal(0)
    expect(await readFile(join(op.root, 'greeting', 'greeting.txt'), 'utf8')).to.equal('hello\n')
    await page.waitForSelector('#transcript details.tool[data-tool="task_request_completion"] .tool-status[data-status="ok"]')
    // Tool calls are collapsed, with their status; usage is summed from model/usage.
    expect(await page.locator('#transcript details.tool[open]').count()).to.equal(0)
    await until(async () => Number(await page.getAttribute('#usage', 'data-total')) >= 45, 'the usage line')
    const usage = await op.host.ctx.operator.usage(session)
    expect(Number(await page.getAttribute('#usage', 'data-total'))).to.equal(usage.promptTokens + usage.completionTokens)
    // The prompt tokens the endpoint served from its cache are shown too (4 a step here).
    expect(Number(await page.getAttribute('#usage', 'data-cached'))).to.equal(4 * usage.steps)
    expect(await page.textContent('#usage')).to.match(/of the prompt \d+ cached/)
    await screenshot(page, 'transcript')
    expect(await axeViolations(page)).to.deep.equal([])
  })

  it('shows queued input (removable) and Stop cancels the running turn: the model sees the abort', async () => {
    const sessionId = await createSession(op.host, { cwd: 'stop', create: true, model: 'test-hold' })
    await login(`/sessions/${sessionId}`)
    await page.waitForSelector('#conversation')
    await until(async () => (await page.textContent('#live')) === 'live', 'the event stream to connect')
    await page.fill('#input-text', 'long job')
    await page.click('#send')
    await until(() => op.holding.started.length === 1, 'the turn to start')
    await page.fill('#input-text', 'second')
    await page.keyboard.press('Control+Enter')
    await page.fill('#input-text', 'third')
    await page.click('#send')
    await until(async () => await page.locator('#queue-list li').count() === 2, 'two queued turns')
    expect(await page.locator('#queue-list .queued-text').allTextContents()).to.deep.equal(['second', 'third'])
    expect(await axeViolations(page)).to.deep.equal([])
    await screenshot(page, 'queue')
    await page.click('#queue-list li:first-child button')
    await until(async () => await page.locator('#queue-list li').count() === 1, 'the removed turn to go')
    expect(op.host.ctx.agents.get(sessionId)!.queuedTurns().map((t) => t.text)).to.deep.equal(['third'])

    await page.click('#stop')
    await page.waitForSelector('#transcript .msg.note')
    expect(op.holding.aborts).to.deep.equal(['long job'])
    expect(await page.textContent('#input-status')).to.include('1 queued turn dropped')
    await until(async () => await page.locator('#queue').isHidden(), 'the queue to empty')
    await op.host.ctx.agents.get(sessionId)!.whenIdle()
    // A cancelled turn is not a model fault: the transcript shows the stop, never a model error.
    expect(await page.locator('#transcript .model-error').count()).to.equal(0)
    expect(op.holding.started).to.deep.equal(['long job'])
  })

  it('keeps the next message the operator typed while the previous one was being sent', async () => {
    const sessionId = await createSession(op.host, { cwd: 'draft', create: true, model: 'test-hold' })
    await login(`/sessions/${sessionId}`)
    await page.waitForSelector('#conversation')
    // The host's answer to the first message comes only after the operator typed the next one.
    let release!: () => void
    const held = new Promise<void>((resolve) => release = resolve)
    await page.route('**/input', async (route) => { await held; await route.continue() })
    try {
      await page.fill('#input-text', 'first')
      await page.click('#send')
      await until(async () => (await page.textContent('#input-status'))?.includes('Sending') ?? false, 'the send to start')
      await page.fill('#input-text', 'my next draft')
      release()
      await until(async () => !((await page.textContent('#input-status'))?.includes('Sending') ?? true), 'the host\'s answer')
      expect(await page.inputValue('#input-text'), 'the draft typed meanwhile').to.equal('my next draft')
    } finally {
      release()
      await page.unroute('**/input')
    }
    await until(() => op.holding.started.includes('first'), 'the turn to start')
    await page.click('#stop')
    await op.host.ctx.agents.get(sessionId)!.whenIdle()
  })

  it('a stopped step\'s streamed text does not stay "writing…" nor run into the next turn\'s text', async () => {
    let turns = 0
    op.host.ctx.models.register('test-half', {
      step(request: ModelRequest) {
        turns++
        if (turns === 1) {
          request.onText?.('Half a thought')
          // Then nothing until the operator stops the turn.
          return new Promise<ModelStep>((_, reject) => request.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }))
        }
        request.onText?.('Fresh')
        return { text: 'Fresh answer' }
      },
    })
    const sessionId = await createSession(op.host, { cwd: 'half', create: true, model: 'test-half' })
    await login(`/sessions/${sessionId}`)
    await page.waitForSelector('#conversation')
    await until(async () => (await page.textContent('#live')) === 'live', 'the event stream to connect')
    await page.fill('#input-text', 'first')
    await page.click('#send')
    await page.waitForSelector('#transcript [data-streaming] .text')
    await until(async () => (await page.textContent('#transcript [data-streaming] .text')) === 'Half a thought', 'the streamed text')
    await page.click('#stop')
    await page.waitForSelector('#transcript .msg.note')
    await until(async () => await page.locator('#transcript [data-streaming]').count() === 0, 'the stopped stream to end')
    await page.fill('#input-text', 'second')
    await page.click('#send')
    await page.waitForSelector('#transcript .msg.assistant:not(.streaming)')
    expect(await page.locator('#transcript .msg.assistant .text').allTextContents()).to.deep.equal(['Fresh answer'])
    expect(await page.textContent('#transcript')).to.not.include('Half a thoughtFresh')
  })

  it('refuses a directory outside the workspace roots in the form, saying why', async () => {
    await login()
    await page.waitForSelector('#new-session')
    await page.fill('#new-cwd', op.outside)
    await page.click('#new-session button[type="submit"]')
    await page.waitForSelector('#new-session-status [data-code="PATH_OUTSIDE_WORKSPACE"]')
    expect(await op.host.ctx.sessions.list()).to.have.length(0)
  })
})

describe('console: narrow screens, dark mode, cached assets', function () {
  this.timeout(90_000)
  let browser: Browser
  let demo: DemoHost
  let page: Page

  before(async () => {
    browser = await launchBrowser()
    demo = await bootDemoHost()
  })
  after(async () => {
    await browser?.close()
    await demo?.dispose()
  })
  afterEach(async () => {
    await page?.close()
  })

  const noSidewaysScroll = () => page.evaluate('document.scrollingElement.scrollWidth <= window.innerWidth') as Promise<boolean>

  for (const width of [320, 375]) {
    it(`at ${width} px nothing scrolls sideways and the DAG keeps readable labels in its own box`, async () => {
      page = await browser.newPage({ viewport: { width, height: 800 } })
      await openSession(page, demo)
      await page.waitForSelector('#current svg.dag')
      expect(await noSidewaysScroll(), 'the session page scrolls sideways').to.equal(true)
      // Both DAGs (task and impact panel) are drawn at their own size (12 px labels stay 12 px),
      // scrolling inside their .dag-wrap boxes instead.
      for (const scope of ['#current', '#impact']) {
        const dag = await page.evaluate(`(() => {
          const svg = document.querySelector('${scope} svg.dag'), wrap = svg.parentElement
          return { drawn: svg.getBoundingClientRect().width, natural: Number(svg.getAttribute('width')), box: wrap.clientWidth, scroll: wrap.scrollWidth, wrap: wrap.className }
        })()`) as { drawn: number, natural: number, box: number, scroll: number, wrap: string }
        expect(dag.wrap, scope).to.equal('dag-wrap')
        expect(dag.drawn, scope).to.equal(dag.natural)
        expect(dag.scroll, scope).to.be.greaterThan(dag.box)
      }
      // No propose form while a repair waits for a decision (the view offers no propose-repair action then).
      expect(await page.locator('#current form.propose').count(), 'propose form beside a pending decision').to.equal(0)
      // Checkbox targets are at least 24 px: the form's styles, measured on a form of the same markup.
      await page.evaluate(`document.querySelector('#current').insertAdjacentHTML('beforeend',
        '<form class="propose"><fieldset><div class="check"><input type="checkbox" id="probe-root"><label for="probe-root">a</label></div></fieldset></form>')`)
      const box = await page.locator('#probe-root').boundingBox()
      expect(box!.width).to.be.at.least(24)
      expect(box!.height).to.be.at.least(24)
      expect(await axeViolations(page)).to.deep.equal([])
      await screenshot(page, `narrow-${width}`)
      await page.goto(`${demo.host.url}/`)
      await page.waitForSelector('#new-session')
      expect(await noSidewaysScroll(), 'the session list scrolls sideways').to.equal(true)
      expect(await axeViolations(page)).to.deep.equal([])
    })
  }

  it('renders in dark mode (prefers-color-scheme) with 0 axe violations', async () => {
    page = await browser.newPage({ viewport: { width: 1200, height: 900 }, colorScheme: 'dark' })
    await openSession(page, demo)
    await page.waitForSelector('#impact')
    expect(await page.evaluate('getComputedStyle(document.documentElement).backgroundColor')).to.equal('rgb(17, 21, 28)')
    expect(await page.evaluate('getComputedStyle(document.querySelector("#current")).backgroundColor')).to.equal('rgb(26, 32, 42)')
    expect(await axeViolations(page)).to.deep.equal([])
    await screenshot(page, 'dark')
    await page.emulateMedia({ colorScheme: 'light' })
    expect(await page.evaluate('getComputedStyle(document.documentElement).backgroundColor')).to.equal('rgb(247, 248, 250)')
  })

  it('sends assets compressed with validators, and a revisit gets 304s', async () => {
    page = await browser.newPage()
    await openSession(page, demo)
    const first = await page.request.get(`${demo.host.url}/assets/console.js`, { headers: { 'accept-encoding': 'br, gzip' } })
    expect(first.status()).to.equal(200)
    expect(first.headers()['content-encoding']).to.equal('br')
    expect(first.headers()['cache-control']).to.equal('no-cache')
    const etag = first.headers().etag
    expect(etag).to.match(/^W\/"[\w-]{22}"$/)
    const again = await page.request.get(`${demo.host.url}/assets/console.js`, { headers: { 'if-none-match': etag } })
    expect(again.status()).to.equal(304)
    // The browser itself revalidates on a revisit: the server answers 304 for every asset.
    const statuses = new Map<string, number>()
    page.on('response', (response) => {
      if (response.url().includes('/assets/')) statuses.set(new URL(response.url()).pathname, response.status())
    })
    await page.reload()
    await page.waitForSelector('#current')
    expect(statuses.size).to.be.greaterThan(3)
    for (const [path, status] of statuses) expect(status, path).to.equal(304)
  })
})

describe('console: a task\'s checks (recovery)', function () {
  this.timeout(60_000)
  let browser: Browser
  let op: OperatorHost
  let page: Page

  before(async () => {
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
  })
  beforeEach(async () => {
    op = await bootOperatorHost([[WorkspacePlugin], [SupervisorPlugin, { automaticContinuation: false }], [RecoveryPlugin, { checks: [] }], [WebConsole, { demo: false }]],
      ['supervisor', 'recovery', 'webConsole'])
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
  })
  afterEach(async () => {
    await page?.close()
    await op?.dispose()
  })

  it('says plainly that a task without checks will stop unverified, and sets checks through /task checks', async () => {
    const sessionId = await createSession(op.host, { cwd: 'checked', create: true })
    expect((await op.host.http.post(`/api/sessions/${sessionId}/input`, { text: '/task new Greet' })).status).to.equal(200)
    await page.goto(`${op.host.ctx.connection.loginUrl}&next=${encodeURIComponent(`/sessions/${sessionId}`)}`)
    await page.waitForSelector('#checks')
    expect(await page.getAttribute('#checks-missing', 'data-code')).to.equal('VALIDATION_MISSING')
    expect(await page.textContent('#checks-missing')).to.include('will stop unverified')
    expect(await axeViolations(page)).to.deep.equal([])
    await screenshot(page, 'checks-missing')

    await page.fill('#checks-input', '[{"id": "unit", "argv": ["node", "-e", "0"], "timeoutMs": 30000}]')
    await page.click('#set-checks')
    await page.waitForSelector('#checks li[data-check-id="unit"]')
    expect(await page.locator('#checks-missing').count()).to.equal(0)
    expect(await page.getAttribute('#checks .checks-source', 'data-source')).to.equal('task')
    expect(await page.textContent('#checks li')).to.include('node -e 0')
    const session = await op.host.ctx.sessions.get(sessionId)
    const replies = (await session.read({ limit: 1000 })).filter((e) => e.type === 'command/reply' && e.data.reply?.source === 'task')
    expect(replies.at(-1)!.data.reply.checks).to.deep.equal([{ id: 'unit', argv: ['node', '-e', '0'], timeoutMs: 30000 }])

    // A malformed array is refused with its code and changes nothing.
    await page.fill('#checks-input', '[{"id": "bad"')
    await page.click('#set-checks')
    await page.waitForSelector('#input-status [data-code="CONFIG_INVALID"]')
    expect(await page.locator('#checks li[data-check-id="unit"]').count()).to.equal(1)
  })

  it('shows a stage whose background verification gave up on a workspace that kept changing, with its code', async () => {
    const sessionId = await createSession(op.host, { cwd: 'unsettled', create: true })
    expect((await op.host.http.post(`/api/sessions/${sessionId}/input`, { text: '/task new Greet' })).status).to.equal(200)
    const recovery = op.host.ctx.recovery
    const taskId = (await op.host.ctx.supervisor.state(sessionId)).current!.id
    // The record recovery appends when it gives up (plugins/recovery background.ts), through its own service.
    await recovery.exclusive(sessionId, (session) => recovery.append(session, 'unverified', `${taskId}-u${session.seq}`, {
      taskId, nodeId: 'greet', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', lostRounds: 5, at: Date.now(),
      message: 'The workspace kept changing while the stage was verified in the background, so this stage was not verified.',
    }))
    await page.goto(`${op.host.ctx.connection.loginUrl}&next=${encodeURIComponent(`/sessions/${sessionId}`)}`)
    await page.waitForSelector('#checks-unverified')
    expect(await page.getAttribute('#checks-unverified', 'data-code')).to.equal('ARTIFACT_CHANGED')
    expect(await page.getAttribute('#checks-unverified', 'data-reason')).to.equal('workspace-unsettled')
    expect(await page.textContent('#checks-unverified')).to.include('Stage greet not verified').and.include('kept changing')
    expect(await axeViolations(page)).to.deep.equal([])
  })
})
