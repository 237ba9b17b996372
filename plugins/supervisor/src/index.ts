import { Supervisor } from './service'

export { Config } from './config'
export { Supervisor, type CompletionGate, type ResumeGuard, type TaskSubcommand, type TaskTransition, type Transaction } from './service'
export { Controller, type ControllerStatus } from './continuation'
export { Reviews, REVIEW_PAGE_LIMIT, VERDICT_REPAIR_PROMPT, isPendingJob, jobOfReviewer, type VerdictInput } from './reviews'
export { REVIEWER_OWN_TOOLS, REVIEWER_TOOLS } from './guard'
export { nextInstruction, reviewerPrompt } from './instructions'
export { parseBinding, BUILTIN_SUBCOMMANDS } from './commands'
export const name = 'supervisor'

/** The plugin: load it as `[SupervisorPlugin, config]`. */
export { Supervisor as SupervisorPlugin }
export default Supervisor
