import Schema from 'schemastery'
import { strictConfig } from '@taskward/protocol'

export interface Config {
  /** On an empty database, create a demo workspace and run a scripted task that ends with a repair proposal. */
  demo: boolean
  /** Where the demo workspace goes; default `<data directory>/demo-workspace`. */
  demoDirectory?: string
  /** Seconds between keep-alive comments on a live-update stream. */
  heartbeatSeconds: number
  /** Write the demo's outcome as JSON to this file when it settles (`npm start -- --demo-only`). */
  demoResultFile?: string
}

export const Config: Schema<Partial<Config>, Config> = strictConfig('console', Schema.object({
  demo: Schema.boolean().default(true)
    .description('On an empty database, run the demo task (a scripted task that ends waiting for a repair decision).'),
  demoDirectory: Schema.string()
    .description('Directory of the demo workspace; default <data directory>/demo-workspace.'),
  heartbeatSeconds: Schema.natural().min(1).default(15)
    .description('Seconds between keep-alive comments on a live-update stream.'),
  demoResultFile: Schema.string()
    .description('Write the demo outcome as JSON to this file when the demo settles (used by npm start -- --demo-only).'),
})) as Schema<Partial<Config>, Config>
