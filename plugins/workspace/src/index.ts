import { WorkspaceService } from './service'

export { Config } from './config'
export { WorkspaceService } from './service'
export { stampWorkspace } from './stamp'
export const name = 'workspace'

export default WorkspaceService
