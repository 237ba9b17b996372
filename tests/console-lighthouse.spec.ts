import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Config, Result } from 'lighthouse'
import { launch, type LaunchedChrome } from 'chrome-launcher'
import { chromium } from 'playwright-core'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { RepairPlugin } from '@taskward/plugin-repair'
import { removeTree } from '@taskward/testkit'
import type { ModelRequest, ModelStep } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { WebConsole } from '../plugins/console/src'
import { bootOperatorHost, createSession, until, type OperatorHost } from './operator-fixtures'
import { lighthouseReport } from './lighthouse-audit'

/*
 * Lighthouse (the third-party audit issue 11 names) against the real console in Debian's chromium.
 * The scores it holds, in Lighthouse's category order without performance: accessibility 100,
 * best practices 100 (the issue's floor is 97), SEO 100. Performance is not asserted (on a shared
 * 2-core machine it is noise). docs/console.md, "The Lighthouse audit".
 */
const CHROMIUM = '/usr/bin/chromium'
/** Offending nodes listed per failing audit. */
const MAX_ITEMS = 15
const CHROME_FLAGS = ['--headless=new', '--no-sandbox', '--disable-gpu']
/** The issue asks 100/97/100; best practices is held at the 100 the console reaches. */
const TARGETS = { accessibility: 100, 'best-practices': 100, seo: 100 } as const
type Category = keyof typeof TARGETS

const DESKTOP = { formFactor: 'desktop', screenEmulation: { mobile: false, width: 1350, height: 940, deviceScaleFactor: 1, disabled: false } } as const
const MOBILE = { formFactor: 'mobile', screenEmulation: { mobile: true, width: 412, height: 823, deviceScaleFactor: 1.75, disabled: false } } as const
type FormFactor = typeof DESKTOP | typeof MOBILE

/** One audit run: the report of `url` with the given form factor and request headers. */
async function audit(chrome: LaunchedChrome, url: string, form: FormFactor, secret: string, extraHeaders?: Record<string, string>): Promise<Result> {
  const config: Config = {
    extends: 'lighthouse:default',
    settings: {
      onlyCategories: Object.keys(TARGETS),
      ...form,
      // Nothing here measures speed: no throttling, no screenshots (faster runs).
      throttlingMethod: 'provided',
      disableFullPageScreenshot: true,
      extraHeaders,
    },
  }
  return lighthouseReport(url, chrome.port, config, secret)
}

/** "accessibility 100, best-practices 100, seo 100" */
function scores(lhr: Result) {
  return (Object.keys(TARGETS) as Category[]).map((id) => `${id} ${Math.round((lhr.categories[id]?.score ?? 0) * 100)}`).join(', ')
}

/** What a developer needs to fix a category under its target: each failing audit, its title and its nodes. */
function failures(lhr: Result, redirected: boolean) {
  const lines: string[] = []
  if (lhr.runtimeError) lines.push(`runtime error ${lhr.runtimeError.code}: ${lhr.runtimeError.message}`)
  for (const [id, target] of Object.entries(TARGETS)) {
    const category = lhr.categories[id]
    if (!category) {
      lines.push(`${id}: category missing from the report`)
      continue
    }
    const score = Math.round((category.score ?? 0) * 100)
    if (score >= target) continue
    lines.push(`${id} ${score} < ${target}:`)
    for (const ref of category.auditRefs) {
      const result = lhr.audits[ref.id]
      if (!ref.weight || result.score === null || result.score >= 1) continue
      lines.push(`  ${ref.id} (${result.score}): ${result.title}${result.displayValue ? ` — ${result.displayValue}` : ''}`)
      const items = (result.details as any)?.items as any[] | undefined
      for (const item of (items ?? []).slice(0, MAX_ITEMS)) lines.push(`    ${describeItem(item)}`)
      if ((items?.length ?? 0) > MAX_ITEMS) lines.push(`    … and ${items!.length - MAX_ITEMS} more`)
    }
  }
  // A warning says the run may not be what it claims (e.g. the page did not settle): a failure too,
  // except the redirect warning where the audited URL is the login link.
  for (const warning of lhr.runWarnings) {
    if (redirected && / was redirected to /.test(warning)) continue
    lines.push(`run warning: ${warning}`)
  }
  return lines
}

function describeItem(item: any): string {
  const node = item.node ?? item.subItems?.items?.[0]?.relatedNode
  if (node?.type === 'node') return `${node.selector ?? ''} ${node.snippet ?? ''}${node.explanation ? ` — ${node.explanation.replace(/\s+/g, ' ')}` : ''}`
  return JSON.stringify(item).slice(0, 400)
}

/** Two nodes, one depending on the other: a small DAG for the approval view. */
const PLAN = {
  acceptanceCriteria: ['greeting.txt says hello', 'the greeting is checked'],
  nodes: [{ id: 'greet', title: 'Write greeting.txt' }, { id: 'check', title: 'Check the greeting', dependsOn: ['greet'] }],
}

/**
 * The transcript's model: text with tool calls (one failing, one not), then an answer; a model error on
 * "fail"; on "hold" a step that waits until the operator stops it.
 */
function chatModel(request: ModelRequest): ModelStep | Promise<ModelStep> {
  const usage = { promptTokens: 12, completionTokens: 7 }
  if (request.input.text === 'fail') throw new TaskwardError('MODEL_UNAVAILABLE', 'The endpoint did not answer.')
  if (request.input.text === 'hold') {
    return new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(new TaskwardError('ABORTED', 'Stopped.')), { once: true }))
  }
  if (request.step > 0) return { text: 'Wrote notes.txt; missing.txt does not exist.', usage }
  request.onText?.('Reading')
  return {
    text: 'Reading the notes first.',
    toolCalls: [{ name: 'read', args: { path: 'missing.txt' } }, { name: 'write', args: { path: 'notes.txt', content: 'hello\n' } }],
    usage,
  }
}

/** An operator session created over HTTP whose transcript holds every kind of entry the page draws. */
async function chatWithEveryEntry(op: OperatorHost) {
  op.host.ctx.models.register('lighthouse-chat', { step: chatModel })
  const id = await createSession(op.host, { cwd: 'chat', create: true, model: 'lighthouse-chat' })
  const agent = op.host.ctx.agents.get(id)!
  const session = await op.host.ctx.sessions.get(id)
  const say = async (text: string, status = 202) => {
    expect((await op.host.http.post(`/api/sessions/${id}/input`, { text })).status, text).to.equal(status)
  }
  const logged = (type: string) => until(async () => (await session.read({ limit: 1000 })).some((e) => e.type === type), type)
  await say('Take notes')
  await logged('model/usage')
  await agent.whenIdle()
  await say('/task approve', 404) // no task: refused, and the refusal is in the transcript
  await say('fail')
  await logged('agent/error')
  await agent.whenIdle()
  await say('hold')
  await until(() => agent.state === 'running', 'the held turn')
  expect((await op.host.http.post(`/api/sessions/${id}/cancel`, {})).status).to.equal(200)
  await logged('agent/cancelled')
  await agent.whenIdle()
  const types = new Set((await session.read({ limit: 1000 })).map((e) => e.type))
  expect([...types]).to.include.members(['user/message', 'assistant/message', 'tool/call', 'tool/result', 'command/reply', 'agent/error', 'agent/cancelled', 'model/usage'])
  return id
}

/** A session whose plan, passed by its reviewer, waits for the operator's Approve plan button; no checks set. */
async function planAwaitingApproval(op: OperatorHost) {
  op.host.ctx.models.register('lighthouse-plan', {
    async step(request) {
      const task = (await op.host.ctx.supervisor.state(request.session)).current
      if (request.step > 0 || task?.phase !== 'planning') return {}
      return { text: 'Planning the greeting.', toolCalls: [{ name: 'task_submit_plan', args: structuredClone(PLAN) }] }
    },
  })
  const pass = () => ({ toolCalls: [{ name: 'review_verdict', args: { verdict: 'pass', findings: ['The plan covers the criteria.'], evidenceSeqs: [] } }] })
  op.host.ctx.models.scripted.script('reviewer', [pass])
  const id = await createSession(op.host, { cwd: 'plan', create: true, model: 'lighthouse-plan' })
  expect((await op.host.http.post(`/api/sessions/${id}/input`, { text: '/task new Write a greeting file' })).status).to.equal(200)
  await until(async () => (await op.host.ctx.supervisor.state(id)).current?.phase === 'awaiting-approval', 'the plan to await approval', 30_000)
  // Recovery is loaded and the task has no checks: the page warns that it would stop unverified.
  const view = (await op.host.http.json(`/api/console/sessions/${id}/view`)).body
  expect(view.checks.loaded).to.equal(true)
  expect(view.checks.checks ?? []).to.deep.equal([])
  return id
}

describe('console: Lighthouse audit (accessibility 100, best practices 100, SEO 100)', function () {
  this.timeout(240_000)
  let chrome: LaunchedChrome
  let darkChrome: LaunchedChrome
  let op: OperatorHost
  let demoSession: string
  let chatSession: string
  let planSession: string
  let operator: Record<string, string>
  let demoDirectory: string | undefined

  before(async () => {
    // Fail, never skip: CI installs chromium (scripts/test.sh).
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)`)
    demoDirectory = await mkdtemp(join(tmpdir(), 'taskward-lighthouse-'))
    op = await bootOperatorHost([[WorkspacePlugin], [SupervisorPlugin, {}], [RepairPlugin, {}], [RecoveryPlugin, {}], [WebConsole, { demo: true, demoDirectory }]],
      ['supervisor', 'recovery', 'webConsole'])
    const demo = await op.host.ctx.webConsole.demo
    if (demo.status !== 'ready' || !demo.proposalId) throw new Error(`the demo did not end with a proposal: ${JSON.stringify(demo)}`)
    demoSession = demo.sessionId
    // With recovery loaded the task view also has its Checks section.
    expect((await op.host.http.json(`/api/console/sessions/${demoSession}/view`)).body.checks.loaded).to.equal(true)
    chatSession = await chatWithEveryEntry(op)
    planSession = await planAwaitingApproval(op)
    // The login link's cookie for the first audit; the others send the operator token as a header.
    operator = { Authorization: `Bearer ${op.host.operatorToken}` }
    chrome = await launch({ chromePath: CHROMIUM, chromeFlags: CHROME_FLAGS })
  })
  after(async () => {
    chrome?.kill()
    darkChrome?.kill()
    await op?.dispose()
    if (demoDirectory) await removeTree(demoDirectory)
  })

  /**
   * Audit `url`; `rendered` names accessibility audits that only apply once the page's script has
   * drawn the view (so a page stuck on "Loading…" or an error cannot pass by having nothing to check).
   */
  const check = async (what: string, url: string, form: FormFactor, options: { rendered: string[], headers?: Record<string, string>, browser?: LaunchedChrome, redirected?: boolean }) => {
    const lhr = await audit(options.browser ?? chrome, url, form, op.host.operatorToken, options.headers)
    const label = `${what} (${form.formFactor})`
    console.log(`      ${label}: ${scores(lhr)}`)
    const problems = failures(lhr, options.redirected ?? false)
    for (const id of options.rendered) {
      const audit = lhr.audits[id]
      if (!audit || audit.scoreDisplayMode === 'notApplicable') problems.push(`${id}: not applicable, so the view was not rendered when Lighthouse looked`)
    }
    // Thrown as text, not compared as an array: mocha drops a long diff, and the developer needs every line.
    if (problems.length) {
      const where = `${label} at ${lhr.finalDisplayedUrl}`
      throw new Error([`Lighthouse: ${where}`, ...problems].join('\n').replaceAll(op.host.operatorToken, '<operator token>'))
    }
  }
  const SESSIONS_RENDERED = ['select-name', 'label', 'button-name']
  const TASK_RENDERED = ['td-has-header', 'definition-list', 'label', 'button-name']
  const TRANSCRIPT_RENDERED = ['label', 'button-name']
  const APPROVAL_RENDERED = ['definition-list', 'label', 'button-name']

  it('the login link, landing on the session list with the New session form (desktop and mobile)', async () => {
    // The console has no login form: the link sets the cookie and redirects (Lighthouse warns about that redirect).
    await check('login link → session list', op.host.ctx.connection.loginUrl, DESKTOP, { rendered: SESSIONS_RENDERED, redirected: true })
    await check('login link → session list', op.host.ctx.connection.loginUrl, MOBILE, { rendered: SESSIONS_RENDERED, redirected: true })
  })

  it('the task view with its DAG and a pending repair proposal (desktop and mobile)', async () => {
    await check('task view', `${op.host.url}/sessions/${demoSession}`, DESKTOP, { rendered: TASK_RENDERED, headers: operator })
    await check('task view', `${op.host.url}/sessions/${demoSession}`, MOBILE, { rendered: TASK_RENDERED, headers: operator })
  })

  it('a plan awaiting approval: the Approve plan button, no checks yet (desktop and mobile)', async () => {
    await check('awaiting approval', `${op.host.url}/sessions/${planSession}`, DESKTOP, { rendered: APPROVAL_RENDERED, headers: operator })
    await check('awaiting approval', `${op.host.url}/sessions/${planSession}`, MOBILE, { rendered: APPROVAL_RENDERED, headers: operator })
  })

  it('an operator session\'s transcript: messages, tool calls, a refused command, a model error, a stop (desktop)', async () => {
    await check('transcript', `${op.host.url}/sessions/${chatSession}`, DESKTOP, { rendered: TRANSCRIPT_RENDERED, headers: operator })
  })

  it('the task view and the transcript in dark mode (mobile)', async () => {
    darkChrome = await launch({ chromePath: CHROMIUM, chromeFlags: [...CHROME_FLAGS, '--force-dark-mode'] })
    // Prove the flag took (Lighthouse itself emulates no colour scheme): the page's prefers-color-scheme is dark in this browser.
    const probe = await chromium.connectOverCDP(`http://127.0.0.1:${darkChrome.port}`)
    try {
      // colorScheme null: playwright emulates nothing, so the page sees the browser's own scheme.
      const page = await (await probe.newContext({ colorScheme: null })).newPage()
      expect(await page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")).to.equal(true)
      await page.close()
    } finally {
      await probe.close()
    }
    await check('task view, dark', `${op.host.url}/sessions/${demoSession}`, MOBILE, { rendered: TASK_RENDERED, headers: operator, browser: darkChrome })
    await check('transcript, dark', `${op.host.url}/sessions/${chatSession}`, MOBILE, { rendered: TRANSCRIPT_RENDERED, headers: operator, browser: darkChrome })
  })
})
