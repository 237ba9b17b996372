import { AdmissionService } from './service'

export { Config } from './config'
export { AdmissionService } from './service'
export { RecordIndexCache, RECORD_PAIRS_PROJECTION, RECORD_PAIRS_VERSION } from './index-cache'
export { ReaderRegistry } from './registry'
export const name = 'admission'

export default AdmissionService
