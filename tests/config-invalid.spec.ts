import { expect } from 'chai'
import { Context } from 'cordis'
import * as Host from '@taskward/host'
import { AdmissionService } from '@taskward/plugin-admission'
import { WebConsole } from '@taskward/plugin-console'
import * as Database from '@taskward/plugin-database'
import { RecoveryPlugin } from '@taskward/plugin-recovery'
import { RepairPlugin } from '@taskward/plugin-repair'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import WorkspacePlugin from '@taskward/plugin-workspace'
import { TaskwardError } from '@taskward/protocol'
import { TestHost } from '@taskward/testkit'

/*
 * Fail-loud configuration (docs/operations.md): an invalid value or an unknown key of any plugin stops
 * that plugin's load with CONFIG_INVALID naming the key and the value — the plugin never runs on
 * defaults, not even when a service it injects appears later — and a valid config still loads.
 */

interface Case {
  plugin: any
  service: string
  name: string
  config: unknown
  key: string
  value?: unknown
}

const BASE: [any, any][] = [[SupervisorPlugin, { automaticContinuation: false }], [WorkspacePlugin, {}]]

const cases: Case[] = [
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checks: [{ id: 'unit', argv: 'npm test' }] }, key: 'checks[0].argv', value: 'npm test' },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { budgets: { maxAttempts: 0 } }, key: 'budgets.maxAttempts', value: 0 },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { budgets: { maxAtempts: 3 } }, key: 'budgets.maxAtempts', value: 3 },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checkz: [] }, key: 'checkz', value: [] },
  {
    plugin: RecoveryPlugin, service: 'recovery', name: 'recovery',
    config: { checks: [{ id: 'unit', argv: ['npm', 'test'] }, { id: 'unit', argv: ['npm', 'run', 'lint'] }] }, key: 'checks[1].id', value: 'unit',
  },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checks: [{ id: 'unit', argv: [] }] }, key: 'checks[0].argv', value: [] },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checks: [{ id: 'unit', argv: [''] }] }, key: 'checks[0].argv', value: [''] },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checks: [{ id: 'unit', argv: ['npm'], shell: true }] }, key: 'checks[0].shell', value: true },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { sandbox: 'none' }, key: 'sandbox', value: 'none' },
  // Pins the schema alone let through: a negation, a path leaving the workspace, an empty glob (each would pin nothing).
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checks: [{ id: 'unit', argv: ['npm', 'test'], pin: ['!test/**'] }] }, key: 'checks[0].pin', value: ['!test/**'] },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checks: [{ id: 'unit', argv: ['npm', 'test'], pin: ['../shared/**'] }] }, key: 'checks[0].pin', value: ['../shared/**'] },
  { plugin: RecoveryPlugin, service: 'recovery', name: 'recovery', config: { checks: [{ id: 'unit', argv: ['npm', 'test'], pin: [' '] }] }, key: 'checks[0].pin', value: [' '] },
  { plugin: SupervisorPlugin, service: 'supervisor', name: 'supervisor', config: { progressReviewAfterTurns: 0 }, key: 'progressReviewAfterTurns', value: 0 },
  { plugin: SupervisorPlugin, service: 'supervisor', name: 'supervisor', config: { maxContinuation: 5 }, key: 'maxContinuation', value: 5 },
  { plugin: WorkspacePlugin, service: 'workspace', name: 'workspace', config: { repairMaxFiles: 0 }, key: 'repairMaxFiles', value: 0 },
  { plugin: AdmissionService, service: 'admission', name: 'admission', config: { persistEvery: -1 }, key: 'persistEvery', value: -1 },
  { plugin: RepairPlugin, service: 'repair', name: 'repair', config: { repairMaxFiles: 10 }, key: 'repairMaxFiles', value: 10 },
  { plugin: WebConsole, service: 'webConsole', name: 'console', config: { demo: false, heartbeatSeconds: 'soon' }, key: 'heartbeatSeconds', value: 'soon' },
]

function expectConfigInvalid(error: unknown, name: string, key: string, value: unknown) {
  expect(TaskwardError.is(error, 'CONFIG_INVALID'), String(error)).to.equal(true)
  const coded = error as TaskwardError
  expect(coded.details).to.deep.include({ plugin: name, key })
  expect(coded.details!.value).to.deep.equal(value)
  expect(coded.message).to.include(`${name} config: ${key} = ${JSON.stringify(value)}`)
}

describe('fail-loud plugin config', function () {
  this.timeout(60_000)
  let host: TestHost | undefined
  afterEach(async () => {
    await host?.dispose()
    host = undefined
  })

  for (const { plugin, service, name, config, key, value } of cases) {
    it(`${name}: ${JSON.stringify(config)} stops the plugin with CONFIG_INVALID naming ${key}`, async () => {
      // Loaded before the services it injects: cordis would otherwise apply it on defaults once they appear.
      const others = BASE.filter(([p]) => p !== plugin)
      host = await TestHost.boot({ plugins: [[plugin, config], ...others], waitFor: others.map(([p]) => p === SupervisorPlugin ? 'supervisor' : 'workspace') })
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(host.ctx.get(service), `${service} must not run`).to.equal(undefined)
      const refusal = host.errors.find((e) => TaskwardError.is(e, 'CONFIG_INVALID') && (e as TaskwardError).details?.key === key)
      expectConfigInvalid(refusal, name, key, value)
    })
  }

  it('a valid config of every plugin still loads', async () => {
    host = await TestHost.boot({
      plugins: [
        [SupervisorPlugin, { automaticContinuation: false, progressReviewAfterTurns: 2 }], [WorkspacePlugin, { repairMaxFiles: 500 }],
        [AdmissionService, { persistEvery: 10 }], [RepairPlugin, {}], [WebConsole, { demo: false, heartbeatSeconds: 5 }],
        [RecoveryPlugin, { checks: [{ id: 'unit', argv: ['npm', 'test'], pin: ['./test/**', 'src/fixtures/'] }, { id: 'lint', argv: ['npm', 'run', 'lint'] }], budgets: { maxAttempts: 4 } }],
      ],
      host: { connection: { allowedOrigins: ['http://localhost:3000'] } },
      waitFor: ['supervisor', 'workspace', 'admission', 'repair', 'webConsole', 'recovery'],
    })
    expect(host.errors).to.deep.equal([])
    expect(host.ctx.recovery.config.budgets.maxAttempts).to.equal(4)
    expect(host.ctx.recovery.config.checks.map((c) => c.id)).to.deep.equal(['unit', 'lint'])
    // Pins in config are normalized as /task checks normalizes them (minimatch would match nothing for `./test/**`).
    expect(host.ctx.recovery.config.checks[0].pin).to.deep.equal(['test/**', 'src/fixtures'])
  })

  it('host and database: an unknown or invalid key is refused when cordis loads them; a secret is never echoed', () => {
    const ctx = new Context()
    const errors: unknown[] = []
    ctx.on('internal/error', (error: unknown) => { errors.push(error) })
    // As cordis.yml rows arrive: untyped.
    const rows: [any, unknown][] = [[Host, { connection: { anounce: true } }], [Database, { driver: 'sqlite', pth: 'x.db' }], [Database, { driver: 'postgres' }]]
    for (const [plugin, config] of rows) ctx.plugin(plugin, config)
    expectConfigInvalid(errors[0], 'host', 'connection.anounce', true)
    expectConfigInvalid(errors[1], 'database', 'pth', 'x.db')
    expect((errors[2] as TaskwardError).code).to.equal('CONFIG_INVALID')
    expect((errors[2] as TaskwardError).details).to.include({ plugin: 'database', key: 'driver' })
    // A secret's value never appears, neither alone nor inside a dumped object.
    for (const bad of [{ driver: 'mysql', password: 12345 }, { driver: 'mysql', password: 'hunter2-secret', port: 'x' }]) {
      let error: TaskwardError | undefined
      try {
        Database.Config(bad as any)
      } catch (caught) {
        error = caught as TaskwardError
      }
      expect(error?.code).to.equal('CONFIG_INVALID')
      expect(error!.details).to.include({ plugin: 'database' })
      expect(error!.message + JSON.stringify(error!.details)).to.not.match(/12345|hunter2/)
    }
    // Valid configs resolve to their defaults.
    expect(Database.Config({} as any)).to.deep.include({ driver: 'sqlite', path: 'taskward.db' })
    expect(Host.Config(undefined as any).agents).to.deep.include({ maxStepsPerTurn: 25 })
  })
})
