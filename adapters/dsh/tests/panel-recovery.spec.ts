import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { build } from 'esbuild'
import { DEFAULT_BUDGETS, recoveryView, type TaskRecovery } from '@taskward/protocol'
// @ts-expect-error plain ESM script without types
import { dshDir } from '../../../scripts/dsh/install.mjs'

/*
 * The panel's "Checks and budgets" section rendered by DSH's own React (the one the page gives the
 * panel), from protocol's recoveryView: a stage verification that gave up shows its headline and
 * message, as the console does. Needs the cached DSH (its React); skips without it, as tests/dsh does.
 */
describe('DSH panel: the recovery section', function () {
  this.timeout(60_000)
  // DSH's web client React (its trajectory UI's copy: react and react-dom of one release; the top-level
  // react of the install is another major, without a react-dom beside it).
  const modules = join(dshDir(), 'node_modules', '@deepseek-ai', 'dsh-client-ui-trajectory', 'node_modules')
  let Recovery: (props: { view: unknown }) => unknown
  let render: (element: unknown) => string
  let createElement: (...args: unknown[]) => unknown

  before(async function () {
    if (!existsSync(join(modules, 'react', 'package.json')) || !existsSync(join(modules, 'react-dom', 'package.json'))) return this.skip()
    const require = createRequire(join(modules, 'noop.js'))
    const react = require('react')
    render = require('react-dom/server').renderToStaticMarkup
    createElement = react.createElement
    // The panel module as the page gets it, but with `react` from DSH's install (never a copy of ours).
    const bundled = await build({
      entryPoints: [join(import.meta.dirname, '..', 'client', 'panel.ts')],
      bundle: true, write: false, format: 'cjs', platform: 'node', target: 'es2022', logLevel: 'warning', external: ['react'],
    })
    const module = { exports: {} as Record<string, any> }
    new Function('module', 'exports', 'require', bundled.outputFiles[0]!.text)(module, module.exports, (id: string) => id === 'react' ? react : require(id))
    Recovery = module.exports.Recovery
  })

  const checks = [{ id: 'tests', argv: ['npm', 'test'], timeoutMs: 1000 }]
  const task = {
    taskId: 't', agentRequests: 0, counters: { attempts: 1, totalSteps: 2, verifyReruns: 0, strategyChanges: 0 }, attempts: [], decisions: [],
    unverified: { taskId: 't', nodeId: 'b', code: 'ARTIFACT_CHANGED', reason: 'workspace-unsettled', message: 'The workspace kept changing.', lostRounds: 5, at: 9, seq: 12 },
  } as unknown as TaskRecovery

  it('shows a stage verification that gave up, with its code, and nothing of it once a later attempt verified', () => {
    const html = render(createElement(Recovery, { view: { checks: { recovery: recoveryView(task, checks, { ...DEFAULT_BUDGETS }) } } }))
    expect(html).to.include('data-code="ARTIFACT_CHANGED"').and.include('data-reason="workspace-unsettled"')
    expect(html).to.include('Stage b not verified (ARTIFACT_CHANGED).').and.include('The workspace kept changing.')
    const later = render(createElement(Recovery, { view: { checks: { recovery: recoveryView({ ...task, unverified: undefined }, checks, { ...DEFAULT_BUDGETS }) } } }))
    expect(later).to.include('tests (npm test)').and.not.include('not verified')
  })
})
