import Schema from 'schemastery'
import { strictConfig } from '@taskward/protocol'

/** Workspace limits belong to the workspace plugin; these settle Confirm clicks across hosts. */
export interface Config {
  /**
   * MySQL/MariaDB only: how often (ms) a host looks for Confirm clicks relayed to the sessions it
   * drives, and how often a host that relayed one looks for the answer.
   */
  clickRelayPollInterval: number
  /**
   * MySQL/MariaDB only: how long (ms) a host that relayed a Confirm click waits for the driving host
   * to take it before answering `LEASE_HELD`.
   */
  clickRelayTimeout: number
}

/** Unknown keys (e.g. `repairMaxFiles`, which belongs to the workspace plugin) are refused. */
export const Config: Schema<Partial<Config>, Config> = strictConfig('repair', Schema.object({
  clickRelayPollInterval: Schema.natural().min(10).default(100)
    .description('MySQL/MariaDB only: how often (ms) a host looks for Confirm clicks relayed to the sessions it drives (and for their answers).'),
  clickRelayTimeout: Schema.natural().min(100).default(10_000)
    .description('MySQL/MariaDB only: how long (ms) a Confirm click on a host that does not drive the session waits for the driving host to take it; then LEASE_HELD.'),
}) as Schema<Partial<Config>, Config>)
