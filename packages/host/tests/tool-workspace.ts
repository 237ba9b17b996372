/* A host, a workspace and a session in it, for the suites that call file tools directly (no tests here). */
import type { Session, ToolResult } from '@taskward/host'
import { TestHost, removeTree, tempWorkspace } from '@taskward/testkit'

export interface ToolWorkspace {
  host: TestHost
  cwd: string
  session: Session
  /** Run tool `name` with `args` in the session, as a model's call would. */
  run(name: string, args: unknown): Promise<ToolResult>
}

/** Registers hooks that give each test a fresh host and a workspace holding `files`. */
export function useToolWorkspace(files: Record<string, string>): ToolWorkspace {
  const workspace = { run: (name, args) => workspace.host.ctx.tools.execute(workspace.session, name, args) } as ToolWorkspace
  beforeEach(async () => {
    workspace.host = await TestHost.boot()
    workspace.cwd = await tempWorkspace(files)
    workspace.session = await workspace.host.ctx.sessions.create({ cwd: workspace.cwd })
  })
  afterEach(async () => {
    await workspace.host.dispose()
    await removeTree(workspace.cwd)
  })
  return workspace
}
