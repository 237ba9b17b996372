import Schema from 'schemastery'
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, strictConfig } from '@taskward/protocol'

export interface Config {
  /** Entries (directories + regular files below the root) a stamp may walk. */
  repairMaxFiles: number
  /** Regular-file bytes a stamp may hash. */
  repairMaxBytes: number
}

// A positive safe integer; schemastery refuses 0, fractions, strings, NaN and Infinity at load.
const positiveInteger = () => Schema.natural().min(1).max(Number.MAX_SAFE_INTEGER)

export const Config: Schema<Partial<Config>, Config> = strictConfig('workspace', Schema.object({
  repairMaxFiles: positiveInteger().default(DEFAULT_MAX_ENTRIES)
    .description('Most entries (files and directories, not counting the root .git) a workspace stamp may walk. A larger tree fails with ARTIFACT_LIMIT.'),
  repairMaxBytes: positiveInteger().default(DEFAULT_MAX_BYTES)
    .description('Most bytes of file content a workspace stamp may hash. A larger tree fails with ARTIFACT_LIMIT.'),
}))
