/*
 * The parts of DSH 0.1.0-rc.8's services this adapter uses, declared structurally (the bundle imports
 * nothing from DSH's packages: it gets the services from its context). Source paths are inside the
 * DSH tree; docs/dsh.md lists what each one is used for. Keep every rc.8-specific shape here.
 */

export interface DshEvent {
  readonly type: string
  readonly seq: number
  readonly time: number
  readonly data: any
}

/** packages/core/session/src/index.ts `Session` (in memory: the whole log is `events`). */
export interface DshSession {
  readonly id: string
  readonly header: { readonly id: string, readonly cwd?: string, readonly parentSession?: string, readonly createdAt: number }
  readonly events: readonly DshEvent[]
  readonly seq: number
  /** Synchronous; DSH refuses a type it does not know. */
  append(type: string, data: unknown): DshEvent
}

/** packages/core/session/src/index.ts `SessionStore` (ctx key `sessions`). */
export interface DshSessions {
  get(id: string): DshSession | undefined
  list(): DshSession[]
  flush?(session: DshSession): Promise<void>
}

/** A user-role message (packages/llm/llm/src/message.ts). */
export interface DshUserMessage {
  readonly id: string
  readonly role: 'user'
  readonly content: { type: 'text', text: string }[]
  readonly source: { kind: string, [key: string]: unknown }
}

/** packages/core/agent/src/inbox.ts */
export interface DshInbox {
  readonly nextStep: readonly DshUserMessage[]
  readonly nextTurn: readonly DshUserMessage[]
  splice(target: 'next-step' | 'next-turn', start: number, deleteCount: number, inserted: DshUserMessage[]): DshUserMessage[]
}

/** packages/core/agent/src/runtime-types.ts `Agent` (its id is its session's id). */
export interface DshAgent {
  readonly id: string
  readonly options?: { provider?: string, model?: string }
  readonly session: DshSession
  readonly inbox: DshInbox
  readonly status: 'idle' | 'running'
  cancel(cause: unknown, options?: { keepInbox?: boolean }): void
  whenIdle(): Promise<void>
  runMaintenance<T>(task: (signal: AbortSignal) => Promise<T>): Promise<T>
  followup(message: DshUserMessage): void
}

/** packages/core/agent/src/index.ts `AgentRegistry` (ctx key `agents`). */
export interface DshAgents {
  get(id: string): DshAgent | undefined
  list(): DshAgent[]
  create(options: { sessionId: string, meta?: { cwd?: string, parentSession?: string }, agentOptions?: { provider?: string, model?: string }, setup?: unknown }): Promise<{ agent: DshAgent } | DshAgent>
  resume(options: { resumeSessionId: string, agentOptions?: { provider?: string, model?: string }, setup?: unknown }): Promise<{ agent: DshAgent } | DshAgent>
}

/** packages/interaction/commands/src/index.ts `CommandRuntime` (ctx key `commands`). */
export interface DshCommands {
  register(definition: {
    name: string
    description: string
    input?: { hint: string }
    handler(invocation: { commandId: string, agent: DshAgent, rawInput: string, signal: AbortSignal }): Promise<DshCommandResult> | DshCommandResult
  }): () => void
}

export type DshCommandResult = { kind: 'success', text?: string } | { kind: 'error', text: string }

/** packages/core/tools/src/index.ts `ToolRuntime` (ctx key `tools`). */
export interface DshTools {
  register(definition: {
    name: string
    description: string
    parameters: Record<string, unknown>
    output: {
      schema: Record<string, unknown>
      render(args: unknown, value: unknown): { type: 'text', text: string }[]
      /** Persisted as the tool/result event's `meta` (top-level calls only), never shown to the model. */
      presentationMeta?(args: unknown, value: unknown): unknown
    }
    execute(args: unknown, exec: { callId: string, name: string, agent?: DshAgent, signal?: AbortSignal }): Promise<unknown>
  }): () => void
}

/** `tools/pre-execute` waterfall answer (packages/core/tools/src/index.ts `PreToolDecision`). */
export type DshPreToolDecision = { kind: 'allow' } | { kind: 'deny', reason: string } | { kind: string, [key: string]: unknown }

/** packages/host/webserver/src/index.ts `WebServer` (ctx key `webServer`). */
export interface DshWebServer {
  register(route: { kind: 'exact' | 'prefix', path: string, handler(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void | Promise<void> }): () => void
  /** rc.8: transform DSH's index page on every render (the panel reads Taskward's prefix from it). */
  tapIndex?(transform: (html: string) => string): () => void
}
