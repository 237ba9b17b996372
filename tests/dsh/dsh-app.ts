import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'

/*
 * Driving DSH rc.8's own web app in Chromium: dismiss its first-run notice, open a session from the
 * sidebar (rows show the workspace's name only, so the right one is found by the Taskward panel's
 * session id), and the test output directory for screenshots.
 */

/** Where a test's screenshots go: `$TASKWARD_TEST_OUTPUT/<name>` (default `test-results/<name>`). */
export async function outputDir(name: string) {
  const dir = join(process.env.TASKWARD_TEST_OUTPUT ?? join(import.meta.dirname, '..', '..', 'test-results'), name)
  await mkdir(dir, { recursive: true })
  return dir
}

export async function openDshApp(page: Page, origin: string) {
  await page.goto(`${origin}/`)
  const notice = page.locator('button:has-text("Continue")')
  await notice.waitFor({ timeout: 15_000 }).then(() => notice.click(), () => {})
  // The sidebar's tree, or (a narrow page, which keeps the session and view last open) the panel itself.
  await page.locator('[role=treeitem][aria-expanded], .tw-panel').first().waitFor()
}

/** Opens the session's Task view (the Taskward panel) from the sidebar. */
export async function openTaskView(page: Page, sessionId: string) {
  const open = page.locator(`.tw-panel[data-session-id="${sessionId}"]`)
  if (await open.count()) return open
  const group = page.locator('[role=treeitem][aria-expanded="false"]')
  while (await group.count()) await group.first().click()
  const rows = page.locator('[role=treeitem][draggable="true"]')
  await rows.first().waitFor()
  const count = await rows.count()
  for (let i = 0; i < count; i++) {
    await rows.nth(i).click()
    await page.getByRole('tab', { name: 'Task', exact: true }).click()
    const panel = page.locator('.tw-panel')
    await panel.waitFor({ timeout: 10_000 })
    if (await panel.getAttribute('data-session-id') === sessionId) return panel
  }
  throw new Error(`no sidebar row opens session ${sessionId}`)
}
