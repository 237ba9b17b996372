/**
 * A numbered, durable event of a session log. Seqs start at 0 and are contiguous; `time` is the
 * append time in milliseconds since the epoch. Events are frozen once returned.
 */
export interface SessionEvent<D = any> {
  readonly seq: number
  readonly type: string
  readonly time: number
  readonly data: D
}

/** Event types the host writes. Plugins write `extension/record` (see envelope.ts). */
export const EventTypes = {
  userMessage: 'user/message',
  assistantMessage: 'assistant/message',
  toolCall: 'tool/call',
  toolResult: 'tool/result',
  commandReply: 'command/reply',
  sessionLink: 'session/link',
  record: 'extension/record',
} as const
