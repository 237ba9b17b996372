import type { Session } from '@taskward/host'
import { trackedProposalView, type SessionEvent, type SupervisorState, type TaskPhase, type TrackedProposalView } from '@taskward/protocol'

export interface RepairsView {
  proposals: TrackedProposalView[]
  current?: { taskId: string, revision: number, phase: TaskPhase }
}

/** The repairs of a main session, with the evidence each proposal cites quoted from the session's log. */
export async function repairsView(main: Session, state: SupervisorState): Promise<RepairsView> {
  const events = new Map<number, SessionEvent>()
  for (const { proposal } of state.proposals) {
    for (const seq of proposal.evidenceSeqs) {
      if (events.has(seq)) continue
      const event = await main.event(seq)
      if (event) events.set(seq, event)
    }
  }
  const view: RepairsView = { proposals: state.proposals.map((tracked) => trackedProposalView(tracked, events)) }
  if (state.current) view.current = { taskId: state.current.id, revision: state.current.revision, phase: state.current.phase }
  return view
}
