import { WorkspaceService } from './service'

export { Config } from './config'
export { WorkspaceService } from './service'
export { readWorkspace, stampWorkspace, type ReadOptions, type WorkspaceReading } from './stamp'
export type { CapturePart, PartReading } from './capture'
export const name = 'workspace'

export default WorkspaceService
