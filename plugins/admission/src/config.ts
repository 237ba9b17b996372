import Schema from 'schemastery'
import { strictConfig } from '@taskward/protocol'

export interface Config {
  /**
   * How many events the in-memory index may run ahead of its database cache before a check writes the
   * cache again. Bounds the fold a restart has to do; 0 writes on every check that saw new events.
   */
  persistEvery: number
}

export const Config: Schema<Partial<Config>, Config> = strictConfig('admission', Schema.object({
  persistEvery: Schema.natural().default(1000)
    .description('Events the reader-admission index may run ahead of its database cache before a check writes it again.'),
}))
