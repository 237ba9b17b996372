import { Context, Service } from 'cordis'
import type { Awaitable } from 'cosmokit'
import { EventTypes, TaskwardError, asTaskwardError, errorResult } from '@taskward/protocol'
import type { Session } from './sessions/session'
import { original } from './original'

export interface CommandInvocation {
  session: Session
  /** Everything after the command name, trimmed. */
  args: string
  /** The whole message. */
  text: string
  /** The seq of the recorded `user/message`. */
  seq: number
}

export type CommandHandler = (invocation: CommandInvocation) => Awaitable<unknown>

export interface CommandOptions {
  /**
   * The handler only appends records to the log, or waits for `session.flushed()` before anything
   * else it does (a process, a file, a message to someone): it may then run once its command is
   * written, before the disk's flush — its reply, committed durable, acknowledges both. Without it the
   * command is durable before the handler runs (an effect never comes before its record).
   */
  recordsOnly?: boolean
}

/** The data of a `command/reply` event. */
export interface CommandReply {
  command: string
  replyTo: number
  reply?: unknown
  error?: { code: string, message: string, details?: Record<string, unknown> }
}

declare module 'cordis' {
  interface Context {
    commands: Commands
  }
}

/**
 * Slash commands. User input is recorded as a `user/message`; input starting with `/` is dispatched
 * to its handler and the reply (or coded error) recorded as `command/reply`; other input goes to the
 * session's agent as a turn.
 */
export class Commands extends Service {
  static inject = ['sessions', 'agents']
  private handlers = new Map<string, { handler: CommandHandler, recordsOnly: boolean }>()
  /** The agent registry itself, read once (a required inject: this service restarts when it changes). */
  private readonly agents: Context['agents']

  constructor(ctx: Context) {
    super(ctx, 'commands', true)
    this.agents = original(ctx.agents)
  }

  register(name: string, handler: CommandHandler, options: CommandOptions = {}) {
    if (!/^[a-z][\w-]*$/.test(name)) throw new TaskwardError('CONFIG_INVALID', `Command name "${name}" is not valid.`)
    if (this.handlers.has(name)) throw new TaskwardError('CONFIG_INVALID', `Command /${name} is already registered.`)
    const entry = { handler, recordsOnly: options.recordsOnly === true }
    this.handlers.set(name, entry)
    return this.ctx.effect(() => () => {
      if (this.handlers.get(name) === entry) this.handlers.delete(name)
    })
  }

  list() {
    return [...this.handlers.keys()].sort()
  }

  /** Record user input and act on it. Returns the command reply, or undefined for a chat message. */
  async input(session: Session, text: string): Promise<CommandReply | undefined> {
    if (typeof text !== 'string' || !text.trim()) throw new TaskwardError('BAD_REQUEST', 'A message needs some text.')
    // `this` is cordis' tracing view when called through `ctx.commands`: every property read through it derives a context.
    const self = original(this)
    if (!text.startsWith('/')) {
      // Checked before recording, so that a refused message does not sit in the log unanswered.
      const agent = self.agents.get(session.id)
      if (!agent) throw new TaskwardError('NOT_FOUND', `No agent runs in session ${session.id}; resume the session first.`)
      // Committed even in the middle of a step (see `appendBatch`). The agent may take it up once it is
      // written (a model request is not an effect); the sender is answered only once it is durable.
      await session.append(EventTypes.userMessage, { text, origin: 'user' }, { commit: true, ack: 'written' })
      agent.followup(text, { origin: 'user', recorded: true })
      await session.flushed()
      return
    }
    // Checked before recording, as a chat message's agent is: a command written here while another
    // host drives the session would race that host's turn (its transitions, its projections).
    const lease = await self.agents.drivenElsewhere(session)
    if (lease) {
      throw new TaskwardError('LEASE_HELD',
        `Session ${session.id} is driven by host ${lease.holder}: send the command there, or here once its lease lapses (in ${(lease.expiresInMs / 1000).toFixed(1)} s unless that host renews it). Nothing was recorded.`,
        { sessionId: session.id, holder: lease.holder, expiresInMs: lease.expiresInMs })
    }
    const head = text.slice(1).split(/\s+/)[0]
    const entry = self.handlers.get(head)
    // A records-only handler runs once its command is written (see `CommandOptions`): the reply below
    // is committed durable, and a flush covers every commit before it.
    const message = await session.append(EventTypes.userMessage, { text, origin: 'user' }, { commit: true, ack: entry?.recordsOnly ? 'written' : 'durable' })
    const reply: CommandReply = { command: head, replyTo: message.seq }
    try {
      if (!entry) throw new TaskwardError('COMMAND_NOT_FOUND', `Unknown command /${head}. Known: ${self.list().map((n) => '/' + n).join(', ') || 'none'}.`)
      reply.reply = (await entry.handler({ session, args: text.slice(1 + head.length).trim(), text, seq: message.seq })) ?? null
    } catch (error) {
      const coded = asTaskwardError(error)
      reply.error = errorResult(coded)
    }
    // Commits what the handler staged in a step before it (a transition), or fails with it.
    await session.append(EventTypes.commandReply, reply, { commit: true })
    return reply
  }
}
