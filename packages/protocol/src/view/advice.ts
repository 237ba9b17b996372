/*
 * What the console tells the user after a refused click: one sentence per stable error code of the
 * repair contract, saying what happened and what to do next. The page picks the text by `code`
 * (never by parsing messages) and also shows the server's own message.
 */
export const REFUSAL_ADVICE: Readonly<Record<string, string>> = {
  ARTIFACT_CHANGED: 'Files changed since the proposal; propose again so that the impact matches the workspace.',
  ACTIVE_TASK_CONFLICT: 'Another task is active in this session; finish, pause or clear it first (no queue, no preemption).',
  REPAIR_STALE: 'This page is out of date (the task or proposal moved on); reload it and decide again.',
  TASK_NOT_COMPLETE: 'Only a complete task can be repaired; wait until it completes.',
  INVALID_REPAIR_SCOPE: 'Choose at least one root node of the plan.',
  REPAIR_EVIDENCE_INVALID: 'The evidence does not name events of this session; propose again.',
  SUPERVISOR_DISABLED: 'Supervision is off for this task; turn it on with /task on, then propose the repair again (switching supervision changes the task revision).',
  ARTIFACT_UNAVAILABLE: 'The workspace could not be read; check that the session\'s directory exists.',
  ARTIFACT_UNSUPPORTED: 'The workspace holds a special file (a FIFO, socket or device), which the workspace stamp does not support.',
  ARTIFACT_LIMIT: 'The workspace is larger than the configured limits; raise the limit the error names (repairMaxFiles or repairMaxBytes for the project\'s own files, dependencyMaxEntries or dependencyMaxBytes for node_modules and the like) in the workspace row of cordis.yml, restart, and propose again.',
  UNAUTHORIZED: 'You are not logged in; open the login link printed at start.',
  FORBIDDEN: 'The request was refused; reload the page from the host\'s own address.',
  BAD_REQUEST: 'The request was malformed; reload the page and try again.',
  READER_UNAVAILABLE: 'This host cannot read every record of the session (a plugin is missing or older); load a plugin version that reads them, then try again.',
  SEQ_CONFLICT: 'The session changed while the click was applied; nothing was written. Reload and decide again.',
}

/** The advice for a code, or a generic line for codes the console does not know. */
export function adviceFor(code: string): string {
  return REFUSAL_ADVICE[code] ?? 'The host refused this action; read its message below.'
}
