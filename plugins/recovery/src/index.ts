import { Recovery } from './service'

export { Config } from './config'
export { Recovery, RECOVERY_PROJECTION_KEY, RECOVERY_PROJECTION_VERSION, type AttemptOptions } from './service'
export { CompletionGate } from './gate'
export { runCheck, type RunOptions } from './runner'
export { prepareArea, removeArea, scrubbedEnv, bwrapArgv, findOnPath, type CheckArea } from './sandbox'
export { BoundedOutput } from './output'
export { readCandidate } from './candidate'
export { turnEvidence, REQUEST_TOOLS } from './evidence'
export const name = 'recovery'

/** The plugin: load it as `[RecoveryPlugin, config]` after the supervisor and workspace plugins. */
export { Recovery as RecoveryPlugin }
export default Recovery
