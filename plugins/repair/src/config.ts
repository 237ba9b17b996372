import Schema from 'schemastery'
import { strictConfig } from '@taskward/protocol'

/** The repair plugin has no settings of its own; workspace limits belong to the workspace plugin. */
export interface Config {}

/** No keys: any key given (e.g. `repairMaxFiles`, which belongs to the workspace plugin) is refused. */
export const Config: Schema<Partial<Config>, Config> = strictConfig('repair', Schema.object({}) as Schema<Partial<Config>, Config>)
