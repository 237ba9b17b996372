import { Recovery } from './service'

export { Config } from './config'
export { Recovery, RECOVERY_PROJECTION_KEY, RECOVERY_PROJECTION_VERSION, type AttemptOptions } from './service'
export { CompletionGate } from './gate'
export { runCheck, bwrapExit, OUTPUT_GRACE_MS, type RunOptions } from './runner'
export {
  prepareArea, removeArea, scrubbedEnv, checkPath, relativePathWarning, bwrapArgv, findOnPath, chooseSandbox, hiddenDirectories, programExists, type CheckArea, type SandboxChoice,
} from './sandbox'
export { BoundedOutput } from './output'
export { readCandidate, observedParent } from './candidate'
export { cancelMainAgent, stopExecution } from './stop'
export { turnEvidence, taskStartSeq, REQUEST_TOOLS } from './evidence'
export const name = 'recovery'

/** The plugin: load it as `[RecoveryPlugin, config]` after the supervisor and workspace plugins. */
export { Recovery as RecoveryPlugin }
export default Recovery
