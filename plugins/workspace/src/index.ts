import { WorkspaceService } from './service'

export { Config } from './config'
export { WorkspaceService } from './service'
export { readWorkspace, stampWorkspace, type WorkspaceReading } from './stamp'
export type { CapturePart } from './capture'
export const name = 'workspace'

export default WorkspaceService
