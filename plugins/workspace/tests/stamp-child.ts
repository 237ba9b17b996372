/**
 * Stamps argv[2] and prints the outcome as JSON: used by the refusal tests to stamp as an unprivileged
 * user when the suite runs as root (root reads through any permission).
 */
import { Context } from 'cordis'
import WorkspacePlugin from '../src'

const ctx = new Context()
ctx.plugin(WorkspacePlugin, {})
await ctx.start()
try {
  const stamp = await ctx.workspace.stamp(process.argv[2])
  console.log(JSON.stringify({ stamp }))
} catch (error: any) {
  console.log(JSON.stringify({ code: error.code, message: error.message, details: error.details }))
}
await ctx.stop()
