import type { DshEvent } from './dsh-types'

/*
 * DSH's `user/message`, `assistant/message` and `tool/result` events keep their names in Taskward's
 * view (repair evidence cites them), so their data is given Taskward's shape (docs/host.md): a message
 * `{text}`, a tool result `{callId, name, result}` or `{callId, name, error: {code, message}}`, the
 * result being the text the agent read. DSH's rc.8 shapes (packages/llm/llm/src/message.ts,
 * packages/core/agent-loop/src/tool-calls.ts): a user message is the message itself; an assistant
 * message and a tool result are `{turn, step, message}`; a tool result names its call only by
 * `callId` and the call's seq (`sourceEventSeqs`), so the call's name is looked up there.
 */

/**
 * The `meta` key of a DSH tool/result whose text is the JSON of a Taskward tool's value (tools.ts):
 * its `result` is that value again, as on our host, where folds read it (recovery's stage-report
 * trigger reads `result.taskId`). Any other tool's result stays the text the agent read.
 */
export const TASKWARD_RESULT_META = 'taskwardResult'

/** The value a Taskward tool returned, read back from its rendered JSON text; undefined when it is not one. */
function taskwardValue(data: any, text: string): unknown {
  if (data?.meta?.[TASKWARD_RESULT_META] !== true) return undefined
  try {
    const value = JSON.parse(text)
    return value && typeof value === 'object' && !Array.isArray(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** The event types mapped here; every other DSH type stays DSH's under `dsh:<type>`. */
export const SHARED_TYPES: ReadonlySet<string> = new Set(['user/message', 'assistant/message', 'tool/result', 'tool/call'])

/** The text blocks of a DSH content array, joined (images and tool blocks are left out). */
function textOf(content: unknown): string {
  if (!Array.isArray(content)) return ''
  return content.filter((block) => block?.type === 'text' && typeof block.text === 'string').map((block) => block.text).join('\n')
}

/**
 * A call's arguments as our host records them, an object: DSH logs the model's argument text as it
 * streamed in (a JSON string). Text that is not a JSON object (a model's broken arguments) stays text.
 */
function callArguments(value: unknown): unknown {
  if (typeof value !== 'string') return value
  try {
    const parsed = JSON.parse(value)
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : value
  } catch {
    return value
  }
}

/** The data of one of DSH's shared events in Taskward's shape; `eventAt(seq)` reads the session's earlier events. */
export function sharedData(event: DshEvent, eventAt: (seq: number) => DshEvent | undefined): unknown {
  const data = event.data ?? {}
  switch (event.type) {
    case 'user/message': {
      // Taskward's own follow-ups (agents.ts) name their origin (`controller`, …) as on our host, where
      // folds tell a person's message from the controller's by it; a message without a plugin source is a person's.
      // Another plugin's message (DSH's repeat-tool-reminder, time-context…) is no person's either: it
      // must not reset what a person's message resets (the repeated-call row, for one).
      const source = data.source
      const ours = source?.kind === 'plugin' && source.plugin === 'taskward' && typeof source.origin === 'string'
      const plugin = source?.kind === 'plugin' && !ours
      return { text: textOf(data.content), ...(ours ? { origin: source.origin } : plugin ? { origin: 'plugin' } : {}) }
    }
    case 'assistant/message':
      return { text: textOf(data.message?.content) }
    case 'tool/call':
      return { callId: data.callId, name: data.name, args: callArguments(data.arguments) }
    case 'tool/result': {
      const block = Array.isArray(data.message?.content) ? data.message.content[0] : undefined
      const callId = block?.toolCallId ?? data.message?.source?.callId
      const callSeq = (event as { sourceEventSeqs?: number[] }).sourceEventSeqs?.[0]
      const call = callSeq === undefined ? undefined : eventAt(callSeq)
      const name = call?.type === 'tool/call' && call.data?.callId === callId ? call.data.name : undefined
      const text = textOf(block?.content)
      const head = { callId, ...(typeof name === 'string' ? { name } : {}) }
      if (block?.isError) return { ...head, error: { code: typeof data.error?.code === 'string' ? data.error.code : 'TOOL_FAILED', message: text } }
      return { ...head, result: taskwardValue(data, text) ?? text }
    }
  }
  return data
}
