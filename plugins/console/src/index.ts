import type { Context } from 'cordis'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type {} from '@taskward/host'
import type {} from '@taskward/plugin-supervisor'
import { dataDirectory } from '@taskward/plugin-database'
import type { Config } from './config'
import { ConsoleRoutes } from './web-console'
import { runDemo, type DemoOutcome } from './demo/run'

export { Config } from './config'
export { readSessionList, readSessionView, SESSION_LIST_LIMIT } from './routes/api'
export { LiveUpdates } from './routes/live'
export { CONTENT_SECURITY_POLICY, pageShell, escapeHtml } from './routes/pages'
export { runDemo, type DemoOutcome } from './demo/run'
export { ConsoleRoutes, CONSOLE_LINK_TTL_MS, consoleLink } from './web-console'

declare module 'cordis' {
  interface Context {
    webConsole: ConsoleRoutes
  }
}

/**
 * The web console on Taskward's own host (`webConsole` service): the host-neutral ConsoleRoutes
 * (pages, JSON views, live updates) plus the `npm start` demo, which needs our host's operator,
 * agents and models. DSH loads ConsoleRoutes alone (adapters/dsh). See docs/console.md.
 */
export class WebConsole extends ConsoleRoutes {
  static override inject = ['connection', 'sessions', 'supervisor', 'agents', 'commands', 'models', 'operator']

  /** The demo's outcome (skipped when disabled or when sessions exist). */
  override readonly demo: Promise<DemoOutcome>

  constructor(ctx: Context, config: Partial<Config>) {
    super(ctx, config)
    const resolved = this.config
    this.demo = resolved.demo
      ? new Promise<DemoOutcome>((resolve) => ctx.on('ready', () => {
        // In the background: the demo takes a few seconds and must not hold up the host's start.
        const logger = ctx.logger('console')
        runDemo(ctx, resolved.demoDirectory ?? join(dataDirectory(), 'demo-workspace')).then(async (outcome) => {
          if (outcome.status === 'ready') {
            logger.info(`demo ready: session ${outcome.sessionId} — open /sessions/${outcome.sessionId} after logging in`
              + ' (a repair proposal waits for your decision)')
          } else if (outcome.status === 'failed') {
            // Loud: a demo that does not end on its proposal is a broken first impression, not a detail.
            logger.error(`demo failed: ${outcome.message}`)
          } else {
            logger.info(`demo skipped: ${outcome.reason}`)
          }
          if (resolved.demoResultFile) {
            await writeFile(resolved.demoResultFile, JSON.stringify(outcome)).catch((error) => logger.error(`could not write the demo outcome: ${error}`))
          }
          resolve(outcome)
        })
      }))
      : Promise.resolve({ status: 'skipped', reason: 'the demo is disabled' })
  }
}

export const name = 'console'
export default WebConsole
