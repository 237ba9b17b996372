import type { Context } from 'cordis'
import { onDispose } from '@taskward/cordis-compat'
import { TaskwardError, asTaskwardError } from '@taskward/protocol'
import type { DshAgent, DshCommands } from './dsh-types'
import type { DshSessionsContract } from './sessions'
import type { SessionView } from './session-view'
import { refusalText } from './tools'

export type CommandHandler = (invocation: { session: SessionView, args: string, text: string, seq: number }) => unknown

/** DSH lists each command with a description; Taskward's `register(name, handler)` has none. */
const DESCRIPTIONS: Record<string, { description: string, hint?: string }> = {
  task: { description: 'Supervised tasks (Taskward): /task new <objective>, approve, pause, resume, status, console, consult…', hint: 'new <objective> | approve | pause | resume | status | consult' },
}

/**
 * A command reply as DSH shows it. A status reply is read as text: its `statusText` (the supervisor
 * derives it once, @taskward/protocol `taskStatusText`; `/task status --json` answers the view without
 * it). Any other reply: its `message` when it has one, then the whole reply as JSON (what Taskward's own
 * host answers over HTTP), so people read it and clients can parse it.
 */
export function replyText(reply: unknown): string {
  if (reply && typeof reply === 'object' && typeof (reply as any).statusText === 'string') return (reply as any).statusText
  const message = reply && typeof reply === 'object' && typeof (reply as any).message === 'string' ? `${(reply as any).message}\n\n` : ''
  return `${message}\`\`\`json\n${JSON.stringify(reply ?? null, null, 2)}\n\`\`\``
}

/**
 * Taskward's `commands` (docs/host.md) as DSH commands: `/task …` typed in DSH (or sent through
 * DSH's `commands/execute`) runs the handler on the view of the command's agent's session. DSH logs
 * `command/run` / `command/done` itself; a refusal answers `{kind: 'error'}` led by its code.
 */
export class DshCommandsContract {
  private readonly names = new Set<string>()
  protected ctx: Context

  constructor(ctx: Context, private readonly dsh: DshCommands, private readonly sessions: DshSessionsContract) {
    this.ctx = ctx
  }

  /**
   * `options.recordsOnly` (see the kernel's `CommandOptions`) changes nothing here: DSH records and
   * runs its commands itself, and Taskward's records of the handler are durable once appended.
   */
  register(name: string, handler: CommandHandler, _options: { recordsOnly?: boolean } = {}) {
    if (!/^[a-z][\w-]*$/.test(name)) throw new TaskwardError('CONFIG_INVALID', `Command name "${name}" is not valid.`)
    if (this.names.has(name)) throw new TaskwardError('CONFIG_INVALID', `Command /${name} is already registered.`)
    const sessions = this.sessions
    const { description, hint } = DESCRIPTIONS[name] ?? { description: `Taskward /${name}` }
    const unregister = this.dsh.register({
      name,
      description,
      ...(hint ? { input: { hint } } : {}),
      async handler({ agent, rawInput }: { agent: DshAgent, rawInput: string }) {
        const session = sessions.view(agent.session)
        const args = rawInput.trim()
        try {
          const reply = await handler({ session, args, text: `/${name}${rawInput}`, seq: session.seq - 1 })
          return { kind: 'success' as const, text: replyText(reply ?? null) }
        } catch (error) {
          return { kind: 'error' as const, text: refusalText(asTaskwardError(error)) }
        }
      },
    })
    const names = this.names
    names.add(name)
    return onDispose(this.ctx, () => {
      names.delete(name)
      unregister()
    })
  }

  list() {
    return [...this.names].sort()
  }
}
