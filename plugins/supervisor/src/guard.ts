import { realpath } from 'node:fs/promises'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import type { Context } from 'cordis'
import { mainSessionOf, original, type Agent, type Session } from '@taskward/host'
import { admitLinkedTool, admitTool, TaskwardError, type SupervisorState } from '@taskward/protocol'
import type { Supervisor } from './service'

/** What a reviewer session may run: its review tools and read-only file tools. */
export const REVIEWER_TOOLS: readonly string[] = ['review_read_log', 'review_verdict', 'read', 'glob', 'grep']
/** The reviewer's own tools (the supervisor's); the others are the host's read-only file tools. */
export const REVIEWER_OWN_TOOLS: readonly string[] = ['review_read_log', 'review_verdict']

/**
 * Tool admission. Main sessions: the pure `admitTool` on the session's projection (a complete task
 * admits only status, repair proposals and read-only tools; a poisoned projection only inspection).
 * Reviewer sessions: read-only. A session working for a main session (a consultation) is at least as
 * restricted as its main: only inspection while that projection is poisoned, only reading and proposing
 * a repair while that task is complete (`admitLinkedTool`); other sessions are not this guard's business.
 * A poisoned main session also refuses every agent step, and so does every session working for it.
 */
export function registerGuard(ctx: Context, supervisor: Supervisor) {
  // Read once for the per-call lookups below: `sessions` is a required inject (this plugin restarts when it changes).
  const sessions = original(ctx.sessions)
  /** The main session a (non-reviewer, non-main) session works for, if any (the first up its parents). */
  const mainOf = (session: Session) => mainSessionOf(sessions, session)
  ctx.tools.guard(async ({ session, name, tool, args }) => {
    if (session.role === 'reviewer') {
      // Its own two tools, and the file tools only as the read-only tools the host defines under those names,
      // only inside the workspace: DSH's own read/glob/grep read any absolute path (our host's refuse them).
      if (REVIEWER_OWN_TOOLS.includes(name)) return
      if (REVIEWER_TOOLS.includes(name) && tool?.readOnly === true) {
        const outside = await pathOutside(session.cwd, name, args)
        if (outside === undefined) return
        return {
          deny: {
            code: 'PATH_OUTSIDE_WORKSPACE',
            message: `A reviewer reads only inside the workspace it reviews (${session.cwd}); ${JSON.stringify(outside)} lies outside it. `
              + 'Name a path inside the workspace (relative paths are read from its root).',
            details: { path: outside },
          },
        }
      }
      return {
        deny: {
          code: 'FORBIDDEN',
          message: `Reviewer sessions are read-only, so ${name} is not allowed. Read with review_read_log, read, glob or grep `
            + 'and answer with review_verdict.',
        },
      }
    }
    if (session.role !== 'main') {
      const main = await mainOf(session)
      if (!main) return
      const linked = admitLinkedTool(await supervisor.state(main), main.id, name)
      return 'deny' in linked ? linked : undefined
    }
    const admission = admitTool(await supervisor.state(session), name)
    return 'deny' in admission ? admission : undefined
  })

  // A step guard, called directly by every turn: synchronous while the main session's state is in memory.
  // A linked session (a consultation) is held to its main session's poisoning too.
  ctx.agents.stepGuard((agent) => {
    if (agent.session.role === 'reviewer') return
    if (agent.session.role === 'main') {
      const state = supervisor.currentState(agent.session)
      if (state) return poisonedRefusal(agent, agent.session, state)
      return supervisor.state(agent.session).then((state) => poisonedRefusal(agent, agent.session, state))
    }
    return mainOf(agent.session).then(async (main) => main && poisonedRefusal(agent, main, await supervisor.state(main)))
  })
}

/** Argument names that name a place to read (our host's file tools and DSH's): checked as paths. */
const PATH_ARGUMENTS = ['path', 'file_path', 'filePath', 'paths', 'dir', 'directory', 'cwd']
/**
 * Argument names that hold glob filters (a glob's `pattern`, an `include`): matched under the search
 * root (ripgrep's `--glob` anchors a leading `/` to it), so they name no place of their own — only a
 * `..` segment could climb out.
 */
const FILTER_ARGUMENTS = ['include']

/**
 * The first value a file tool's arguments hold that reaches outside `cwd`, or undefined: a path as
 * written (resolved as the tools resolve it: `..` segments removed whether or not the directories exist)
 * or through the links it passes (resolved where it exists); a glob filter that holds a `..` segment.
 */
async function pathOutside(cwd: string, name: string, args: unknown): Promise<string | undefined> {
  if (!args || typeof args !== 'object') return
  const strings = (keys: string[]) => keys.flatMap((key) => {
    const value = (args as Record<string, unknown>)[key]
    return (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string' && item !== '')
  })
  // A glob's pattern is a filter too; a grep's is a regular expression, not a path.
  const filters = strings([...FILTER_ARGUMENTS, ...name === 'glob' ? ['pattern'] : []])
  const climbing = filters.find((filter) => filter.split(/[\\/]/).includes('..'))
  if (climbing !== undefined) return climbing
  const root = await realpath(cwd).catch(() => resolve(cwd))
  for (const value of strings(PATH_ARGUMENTS)) {
    const full = resolve(cwd, value)
    const real = await realpath(full).catch(() => full)
    if ([full, real].some((candidate) => escapes(cwd, root, candidate))) return value
  }
}

function escapes(cwd: string, root: string, path: string): boolean {
  return [resolve(cwd), root].every((base) => {
    const rest = relative(base, path)
    return rest === '..' || rest.startsWith(`..${sep}`) || isAbsolute(rest)
  })
}

/** A poisoned main session refuses every step of its agent and of the sessions linked to it. */
function poisonedRefusal(agent: Agent, main: Session, state: SupervisorState): TaskwardError | undefined {
  if (!state.poisoned) return
  const whose = main === agent.session ? 'the session log' : `the log of session ${main.id}, which this session works for`
  return new TaskwardError('SUPERVISOR_POISONED',
    `${state.poisoned.message}. The agent cannot take steps until a person inspects ${whose}.`,
    { sessionId: main.id, seq: state.poisoned.seq })
}
