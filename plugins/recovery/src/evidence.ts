import type { Session } from '@taskward/host'
import { EventTypes, RECORD_EVENT_TYPE, taskOfStateRecord, type AgentRequest } from '@taskward/protocol'

/** The agent tools whose calls are recorded as requests: they change no decision. */
export const REQUEST_TOOLS: Record<string, AgentRequest['type']> = {
  task_request_retry: 'retry',
  task_propose_strategy: 'strategy',
}

const MAX_REQUEST_TEXT = 2000

export interface TurnEvidence {
  /** Agent steps (assistant messages) since `from`, at least one. */
  steps: number
  /** Retry and strategy requests the agent made since `from`, in log order. */
  requests: AgentRequest[]
}

const TURN_TYPES = [EventTypes.assistantMessage, EventTypes.toolCall]

/** What the agent did since seq `from`: its steps and its recorded requests, read from the log. */
export async function turnEvidence(session: Session, from: number): Promise<TurnEvidence> {
  let steps = 0
  const requests: AgentRequest[] = []
  // Only the two types it counts, through the type index, unfrozen (nothing is kept): a turn's tool
  // results and texts are most of its log, and were read, parsed and frozen for every verification.
  for await (const event of session.events(from, 2000, { types: TURN_TYPES, frozen: false })) {
    if (event.type === EventTypes.assistantMessage) steps++
    if (event.type !== EventTypes.toolCall) continue
    const type = REQUEST_TOOLS[event.data?.name]
    if (!type) continue
    const text = String(event.data.args?.reason ?? event.data.args?.text ?? '').slice(0, MAX_REQUEST_TEXT)
    requests.push({ type, text })
  }
  return { steps: Math.max(1, steps), requests }
}

/** Seq of the first state record of task `taskId` in the log (where the task began), if any. */
export async function taskStartSeq(session: Session, taskId: string): Promise<number | undefined> {
  // Records only (the type index), in small pages: the task's first record is usually early in the log.
  for await (const event of session.events(0, 200, { types: [RECORD_EVENT_TYPE], frozen: false })) {
    if (taskOfStateRecord(event) === taskId) return event.seq
  }
  return undefined
}
