import Schema from 'schemastery'
import { strictConfig } from '@taskward/protocol'

export interface Config {
  /**
   * How many events the in-memory index may run ahead of its database cache before the cache is
   * written again (in the background, as the log advances). Bounds the fold the first check after a
   * restart has to do; 0 writes after every event.
   */
  persistEvery: number
  /**
   * How many sessions' indexes are kept in memory at most: past it, the least recently checked are
   * dropped and read back on their next check. (A session born in this process is indexed from its
   * first event, outside the host's projection memory, whose trimming bounds the others too.)
   */
  liveSessions: number
}

export const Config: Schema<Partial<Config>, Config> = strictConfig('admission', Schema.object({
  persistEvery: Schema.natural().default(100)
    .description('Events the reader-admission index may run ahead of its database cache before it is written again (bounds the work after a restart).'),
  liveSessions: Schema.natural().min(1).default(1000)
    .description('Sessions whose reader-admission index is kept in memory at most; past it the least recently checked are dropped and read back on their next check.'),
}))
