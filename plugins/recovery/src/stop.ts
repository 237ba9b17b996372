import type { Session } from '@taskward/host'
import { pause, type Task } from '@taskward/protocol'
import type { Recovery } from './service'

/** Phases a task can be paused from (the protocol's `pause` refuses the others). */
const PAUSABLE: readonly Task['phase'][] = ['planning', 'awaiting-approval', 'active', 'reviewing']

/**
 * Stop the main agent now: drop its queued turns and end the running one after its current step, so
 * it cannot keep changing the candidate a STOP preserves. Safe inside a gate (no supervisor transition).
 */
export function cancelMainAgent(recovery: Recovery, session: Session) {
  if (session.role === 'main') recovery.home.agents.get(session.id)?.cancel()
}

/**
 * What a STOP does: cancel the agent, pause the task (reason 'recovery') with the candidate left as it
 * is, disarm automatic continuation, and cancel again (a turn queued meanwhile is dropped too). Must
 * not run inside a completion gate or the recovery lock: it is a supervisor transition.
 */
export async function stopExecution(recovery: Recovery, session: Session, taskId: string) {
  cancelMainAgent(recovery, session)
  const supervisor = recovery.home.supervisor
  await supervisor.apply(session, (current, at) => current && current.id === taskId && current.enabled && PAUSABLE.includes(current.phase)
    ? pause(current, { reason: 'recovery' }, at)
    : current!)
  supervisor.controller.disarm(session.id)
  cancelMainAgent(recovery, session)
}
