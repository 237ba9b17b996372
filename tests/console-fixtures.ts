/*
 * Shared helpers of the console browser suites (no tests here): a host with supervisor, workspace,
 * repair and console whose demo leaves a complete task with a pending repair proposal, a Debian
 * chromium driven by playwright-core, and screenshots for docs/console.md (only with
 * TASKWARD_SCREENSHOTS=1, so a normal run does not touch the tree).
 */
import { chromium, type Browser, type Page } from 'playwright-core'
import { join } from 'node:path'
import type { Session } from '@taskward/host'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { RepairPlugin } from '@taskward/plugin-repair'
import { REPAIR_NAMESPACE, RECORD_EVENT_TYPE } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import { WebConsole, type DemoOutcome } from '../plugins/console/src'

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic']

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS })
}

export interface DemoHost {
  host: TestHost
  dir: string
  outcome: Extract<DemoOutcome, { status: 'ready' }>
  session: Session
  dispose(): Promise<void>
}

/** A host whose console demo ran: a complete task and a pending repair proposal from the main agent. */
export async function bootDemoHost(): Promise<DemoHost> {
  const dir = await tempWorkspace({}, 'taskward-console-')
  const host = await TestHost.boot({
    plugins: [[WorkspacePlugin], [SupervisorPlugin, {}], [RepairPlugin, {}], [WebConsole, { demo: true, demoDirectory: join(dir, 'demo') }]],
    waitFor: ['supervisor', 'workspace', 'webConsole'],
  })
  const outcome = await host.ctx.webConsole.demo
  if (outcome.status !== 'ready' || !outcome.proposalId) {
    await host.dispose()
    throw new Error(`the demo did not end with a proposal: ${JSON.stringify(outcome)}`)
  }
  const session = await host.ctx.sessions.get(outcome.sessionId)
  return {
    host, dir, outcome, session,
    async dispose() {
      await host.dispose()
      await removeTree(dir)
    },
  }
}

/** Repair records of a kind in the main session's log. */
export async function repairRecords(session: Session, kind: 'proposal' | 'confirm' | 'decline') {
  const records = []
  for await (const event of session.events()) {
    if (event.type === RECORD_EVENT_TYPE && event.data?.namespace === REPAIR_NAMESPACE && event.data.kind === kind) records.push(event)
  }
  return records
}

/** Open the login link (sets the cookie) and land on the session's task view. */
export async function openSession(page: Page, demo: DemoHost) {
  await page.goto(`${demo.host.ctx.connection.loginUrl}&next=${encodeURIComponent(`/sessions/${demo.outcome.sessionId}`)}`)
  await page.waitForSelector('#current')
}

/** Poll until `check` holds. */
export async function until(check: () => Promise<boolean> | boolean, what: string, timeout = 10_000) {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** docs/images/console-<name>.png, only when TASKWARD_SCREENSHOTS=1. */
export async function screenshot(page: Page, name: string) {
  if (process.env.TASKWARD_SCREENSHOTS !== '1') return
  await page.screenshot({ path: join(import.meta.dirname, '..', 'docs', 'images', `console-${name}.png`), fullPage: true })
}
