/*
 * The names of Taskward's records (event type, namespaces, kinds), alone in a module with no
 * dependency, so a browser bundle that recognises records (the DSH panel's milestone cards) takes
 * these strings without the schemas and readers that import them.
 */

/** The session event type that carries every plugin's durable state. */
export const RECORD_EVENT_TYPE = 'extension/record'
/** The supervisor's task-state records. */
export const TASK_NAMESPACE = 'dsh-task-supervisor'
export const TASK_STATE_KIND = 'state'
/** The repair plugin's records. */
export const REPAIR_NAMESPACE = 'dsh-task-supervisor-repair'
export const REPAIR_KINDS = { proposal: 'proposal', confirm: 'confirm', decline: 'decline' } as const
