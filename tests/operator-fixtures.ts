/*
 * Shared helpers of the operator suites (no tests here): test model adapters (one that streams text
 * and reports usage, one that holds its step until aborted or released) and a host with a workspace
 * root in a temp directory.
 */
import type { Context } from 'cordis'
import type { ModelRequest, ModelStep } from '@taskward/host'
import { TaskwardError } from '@taskward/protocol'
import { TestHost, removeTree, tempWorkspace, type PluginEntry } from '@taskward/testkit'
import { join } from 'node:path'
import { mkdir, realpath } from 'node:fs/promises'

/** A model whose step waits until released or aborted; records each abort it saw. */
export class HoldingModel {
  readonly aborts: string[] = []
  readonly started: string[] = []
  private releases: (() => void)[] = []

  /** Let every waiting step finish (with the text "released"). */
  release() {
    const waiting = this.releases
    this.releases = []
    waiting.forEach((resolve) => resolve())
  }

  step = (request: ModelRequest): Promise<ModelStep> => {
    this.started.push(request.input.text)
    return new Promise<ModelStep>((resolve, reject) => {
      const onAbort = () => {
        this.aborts.push(request.input.text)
        reject(new TaskwardError('ABORTED', 'The model request was aborted.'))
      }
      if (request.signal.aborted) return onAbort()
      request.signal.addEventListener('abort', onAbort, { once: true })
      this.releases.push(() => {
        request.signal.removeEventListener('abort', onAbort)
        resolve({ text: `released: ${request.input.text}` })
      })
    })
  }
}

export interface OperatorModels {
  holding: HoldingModel
}

/** Registers `test-stream` (streams "Hel", "lo"; reports usage) and `test-hold` (a HoldingModel). */
export function testModels(holding: HoldingModel) {
  return {
    name: 'test-models',
    inject: ['models'],
    apply(ctx: Context) {
      ctx.models.register('test-stream', {
        step(request) {
          request.onText?.('Hel')
          request.onText?.('lo')
          return { text: 'Hello', usage: { promptTokens: 3, completionTokens: 2 } }
        },
      })
      ctx.models.register('test-hold', { step: holding.step })
    },
  }
}

export interface OperatorHost {
  host: TestHost
  /** The real path of the workspace root. */
  root: string
  /** A temp directory outside the root (for escape attempts). */
  outside: string
  holding: HoldingModel
  dispose(): Promise<void>
}

export async function bootOperatorHost(plugins: PluginEntry[] = [], waitFor: string[] = []): Promise<OperatorHost> {
  const base = await tempWorkspace({ 'outside/secret.txt': 'secret\n' }, 'taskward-operator-')
  const root = join(base, 'workspaces')
  await mkdir(root, { recursive: true })
  const holding = new HoldingModel()
  const host = await TestHost.boot({
    host: { operator: { workspaceRoots: [root] } },
    plugins: [[testModels(holding)], ...plugins],
    waitFor: ['operator', ...waitFor],
  })
  return {
    host, root: await realpath(root), outside: await realpath(join(base, 'outside')), holding,
    async dispose() {
      holding.release()
      await host.dispose()
      await removeTree(base)
    },
  }
}

/** Create a session over HTTP; returns its id. */
export async function createSession(host: TestHost, body: Record<string, unknown>) {
  const response = await host.http.post('/api/sessions', body)
  const json = await response.json() as any
  if (response.status !== 201) throw new Error(`creating a session failed: ${response.status} ${JSON.stringify(json)}`)
  return json.session.id as string
}

/** Poll until `check` holds. */
export async function until(check: () => Promise<boolean> | boolean, what: string, timeout = 10_000) {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeout) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
