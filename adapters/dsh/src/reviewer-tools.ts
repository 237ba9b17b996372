import type { DshAgent, DshSession, DshTools } from './dsh-types'
import { DSH_READ_ONLY_TOOLS, isDshReadOnly, resolvedDefinition } from './tool-identity'

/*
 * What a reviewer agent in DSH is offered: its two review tools (registered in its own scope, tools.ts)
 * and DSH's own read-only file tools — `read`, `glob`, `grep` as the session's agent preset registered
 * them — on the reviewer session's workspace (the main session's cwd; the supervisor's guard refuses a
 * path outside it, which DSH's own read would take). Nothing that writes, edits or
 * runs: a preset brings DSH's whole standard set (write, edit, bash, subagent…), so right after the
 * preset is mounted the reviewer's own scope restricts what it inherits to those three names (rc.8's
 * `tools.restrict({allow})`, which hides every inherited name it does not list from the model AND from
 * dispatch) and presents its tools natively (a Code Mode preset would add `run_code`, which runs code).
 * The supervisor's guard still refuses anything else a reviewer calls (defence in depth).
 */

/** rc.8's `ToolRuntime` as seen through an agent's own context (packages/core/tools `restrict`, `presentAs`). */
interface ScopedTools extends DshTools {
  restrict?(filter: { allow?: readonly string[], deny?: readonly string[] }): () => void
  presentAs?(mode: 'native' | 'code' | 'both'): () => void
}

/** The read-only tools DSH would run for this agent as its preset registered them (not shadowed, not another plugin's). */
export function presetReadOnlyTools(tools: DshTools, agent: DshAgent): string[] {
  return DSH_READ_ONLY_TOOLS.filter((name) => isDshReadOnly(tools, name, resolvedDefinition(tools, name, agent)))
}

/**
 * Hold a reviewer agent to DSH's read-only file tools (plus what its own scope has: the review tools).
 * Throws when this DSH cannot restrict an agent's tools: the caller fails the reviewer's creation
 * rather than run a reviewer that is offered write and bash.
 */
export function restrictReviewerTools(tools: DshTools, agent: DshAgent): string[] {
  const own = (agent as { ctx?: { tools?: ScopedTools } }).ctx?.tools
  if (typeof own?.restrict !== 'function') throw new Error('this DSH cannot restrict an agent\'s tools (no tools.restrict)')
  const allowed = presetReadOnlyTools(tools, agent)
  // An empty allow list hides every inherited tool: a preset without read/glob/grep leaves the review tools only.
  own.restrict({ allow: allowed })
  own.presentAs?.('native')
  return allowed
}

/**
 * Whether a session's log holds a review prompt Taskward sent (a user message of source
 * `{kind: 'plugin', plugin: 'taskward', jobId}`; nothing a model or a DSH user sends sets a message's
 * source). What tells a Taskward reviewer DSH brings back after a restart from any other session with a
 * parent — a user's fork of a session also has one. Reads the log once (`session.events` copies it).
 */
export function isTaskwardReviewer(session: Pick<DshSession, 'events'>): boolean {
  return session.events.some((event) => {
    const source = event.type === 'user/message' ? event.data?.source : undefined
    return source?.kind === 'plugin' && source.plugin === 'taskward' && typeof source.jobId === 'string'
  })
}
