import { RepairService } from './service'

export { Config } from './config'
export { RepairService } from './service'
export { proposeRepair, type ProposeOutcome, type ProposeRequest } from './propose'
export { confirmRepair, declineRepair, type ConfirmOutcome, type DeclineOutcome } from './confirm'
export { repairsView, type RepairsView } from './view'
export const name = 'repair'

/** The plugin: load it as `[RepairPlugin, {}]` after the supervisor (and the workspace plugin). */
export { RepairService as RepairPlugin }
export default RepairService
