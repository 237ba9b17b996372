import type { ErrorCode } from '../errors'
import type { SupervisorState } from './fold'

/*
 * Tool admission from the supervisor's point of view (a pure decision; the host guard applies it).
 * While the current task is complete, nothing may change artifacts until the user confirms a repair
 * or starts a new task: only status, repair proposals and read-only tools pass. This is admission
 * control, not a filesystem sandbox.
 */

/** Tools allowed while the current task is complete. */
export const COMPLETE_TASK_ALLOWED_TOOLS: readonly string[] = ['task_status', 'task_propose_repair', 'read', 'glob', 'grep']

/** Task execution tools; on a complete task they answer `TASK_COMPLETED`. */
export const EXECUTION_TOOLS: readonly string[] = ['task_start_node', 'task_report_stage', 'task_rework_node', 'task_request_completion']

/** Tools allowed while the projection is poisoned: inspection only. */
export const POISONED_ALLOWED_TOOLS: readonly string[] = ['task_status', 'read', 'glob', 'grep']

export type ToolAdmission = { allow: true } | { deny: { code: ErrorCode, message: string } }

export function admitTool(state: SupervisorState, toolName: string): ToolAdmission {
  if (state.poisoned) {
    if (POISONED_ALLOWED_TOOLS.includes(toolName)) return { allow: true }
    return {
      deny: {
        code: 'SUPERVISOR_POISONED',
        message: `${state.poisoned.message}. Execution is blocked until a person inspects the session log; `
          + 'only task_status and read-only tools are available.',
      },
    }
  }
  const task = state.current
  if (task?.phase !== 'complete') return { allow: true }
  if (COMPLETE_TASK_ALLOWED_TOOLS.includes(toolName)) return { allow: true }
  if (EXECUTION_TOOLS.includes(toolName)) {
    return {
      deny: {
        code: 'TASK_COMPLETED',
        message: `Task ${task.id} is complete; ${toolName} cannot run. To fix a defect, propose a repair with `
          + 'task_propose_repair and wait for the user to confirm it; for new work, ask the user to start a new task.',
      },
    }
  }
  return {
    deny: {
      code: 'REPAIR_CONFIRMATION_REQUIRED',
      message: `Task ${task.id} is complete, so ${toolName} is not allowed: it could change the accepted work. `
        + 'Propose a repair with task_propose_repair and wait for the user to confirm it, or ask the user to start a new task. '
        + 'Until then only task_status, task_propose_repair, read, glob and grep are available.',
    },
  }
}

/** Tools a session working for a main session (a consultation) may run while that task is complete. */
export const LINKED_COMPLETE_ALLOWED_TOOLS: readonly string[] = ['task_status', 'supervisor_propose_repair', 'read', 'glob', 'grep']

/**
 * Admission for a session linked to a main session (a consultation shares its workspace). It is at
 * least as restricted as its main session: while the main projection is poisoned only inspection passes
 * (`POISONED_ALLOWED_TOOLS`); while the main session's task is complete it may only read and propose a
 * repair, like the main agent — or the click could be bypassed through a second session. Otherwise its
 * tools are not the supervisor's business.
 */
export function admitLinkedTool(mainState: SupervisorState, mainSessionId: string, toolName: string): ToolAdmission {
  if (mainState.poisoned) {
    if (POISONED_ALLOWED_TOOLS.includes(toolName)) return { allow: true }
    return {
      deny: {
        code: 'SUPERVISOR_POISONED',
        message: `${mainState.poisoned.message}. Session ${mainSessionId}, which this session works for, is blocked until a person `
          + 'inspects its session log, so this session may only run task_status and read-only tools.',
      },
    }
  }
  const task = mainState.current
  if (task?.phase !== 'complete' || LINKED_COMPLETE_ALLOWED_TOOLS.includes(toolName)) return { allow: true }
  return {
    deny: {
      code: 'REPAIR_CONFIRMATION_REQUIRED',
      message: `Task ${task.id} of session ${mainSessionId} is complete, so ${toolName} is not allowed in a session working for it. `
        + 'Propose a repair with supervisor_propose_repair and wait for the user to confirm it. '
        + 'Until then only task_status, supervisor_propose_repair, read, glob and grep are available.',
    },
  }
}
