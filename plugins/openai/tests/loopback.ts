/* A host on a loopback OpenAIMock, as the plugin-openai suites boot it (no tests here). */
import type { Agent } from '@taskward/host'
import { SupervisorPlugin } from '@taskward/plugin-supervisor'
import type { SessionEvent } from '@taskward/protocol'
import { OpenAIMock, TestHost, removeTree, tempWorkspace } from '@taskward/testkit'
import * as OpenAIPlugin from '../src'
import { KEY, until } from './helpers'

export const ofType = (events: readonly SessionEvent[], type: string) => events.filter((e) => e.type === type)

/** `count` old exchanges of plain prose (≈ 150 tokens each) in the session. */
export async function history(agent: Agent, count: number) {
  for (let i = 0; i < count; i++) {
    await agent.session.append('user/message', { text: `question ${i}: ${'how does the scheduler pick the next ready node in the plan? '.repeat(5)}` })
    await agent.session.append('assistant/message', { text: `answer ${i}: ${'it takes the first node whose dependencies have all passed review. '.repeat(5)}` })
  }
}

/** A host with one route, `mock`, on `mock`; `context`: the plugin's context config. */
export async function bootRoute(mock: OpenAIMock, context: Record<string, unknown> = {}, model = 'qwen2.5-coder') {
  const host = await TestHost.boot({
    plugins: [[OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: KEY, model, maxRetries: 0 }], context }]],
  })
  await until(() => host.ctx.models.routes().includes('mock'))
  return host
}

/**
 * A host whose openai route (on `mock`) has maxTokensPerTask `budget`, with the supervisor; on `dataDir`
 * it starts on another host's data (a restart with other config).
 */
export async function bootBudgetHost(mock: OpenAIMock, budget: number, dataDir?: string) {
  const host = await TestHost.boot({
    plugins: [
      [SupervisorPlugin, { reviewerModel: 'scripted', automaticContinuation: true }],
      [OpenAIPlugin, { routes: [{ route: 'mock', baseURL: mock.baseURL, apiKey: 'sk-budget', maxRetries: 0 }], maxTokensPerTask: budget }],
    ],
    waitFor: ['supervisor'],
    ...dataDir ? { dataDir } : {},
  })
  await until(() => host.ctx.models.routes().includes('openai'))
  return host
}

/** The mock, the host on it and a workspace of one describe block, set up and torn down by its hooks. */
export interface Rig {
  mock: OpenAIMock
  /** Booted by the hooks when `boot` is given; else each test boots its own here (the hooks dispose it). */
  host: TestHost
  cwd: string
  /** A main agent on route `mock` in the workspace. */
  agent(): Promise<Agent>
}

export interface RigOptions {
  /** Set up the mock before the host boots (its context, its fallback). */
  mock?: (mock: OpenAIMock) => void
  boot?: (mock: OpenAIMock) => Promise<TestHost>
  /** One rig for the whole block (before/after) rather than one per test. */
  once?: boolean
}

/** Registers the block's hooks; the returned rig is filled in before each test (or before the block). */
export function useRig(options: RigOptions = {}): Rig {
  const rig = { agent: () => rig.host.ctx.agents.create({ cwd: rig.cwd, model: 'mock', role: 'main' }) } as Rig
  const [setUp, tearDown] = options.once ? [before, after] : [beforeEach, afterEach]
  setUp(async () => {
    rig.mock = await OpenAIMock.start()
    rig.cwd = await tempWorkspace()
    options.mock?.(rig.mock)
    if (options.boot) rig.host = await options.boot(rig.mock)
  })
  tearDown(async () => {
    await rig.host?.dispose()
    delete (rig as Partial<Rig>).host
    await rig.mock.close()
    await removeTree(rig.cwd)
  })
  return rig
}
