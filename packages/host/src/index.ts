import { Context, Schema } from 'cordis'
import { loadedConfig, strictConfig } from '@taskward/protocol'
import { Sessions } from './sessions/service'
import { Projections } from './projections'
import { Tools } from './tools/service'
import { registerFileTools } from './tools/files'
import { Models } from './models/service'
import { Agents } from './agents/service'
import { Commands } from './commands'
import { Connection } from './connection/service'
import { Operator } from './connection/operator'
import { storeRoutes } from './store/routes'

export * from './tables'
export * from './sessions/session'
export * from './sessions/service'
export * from './sessions/ids'
export * from './sessions/catch-up'
export * from './main-of'
export { leaseOf, revokeLapsedLease, type LeaseView } from './sessions/lease'
export * from './projections'
export * from './tools/types'
export * from './tools/service'
export * from './tools/paths'
export * from './models/types'
export * from './models/scripted'
export * from './models/service'
export * from './agents/agent'
export * from './agents/service'
export * from './commands'
export * from './connection/service'
export * from './connection/tokens'
export * from './connection/redirect'
export * from './connection/operator'
export * from './connection/operator-routes'
export * from './connection/workspace-roots'
export * from './keyed-lock'
export * from './original'
export { directEmitter, isHeard } from './sessions/emit'
export * from './store/health'
export * from './store/routes'
export * from './store/doctor'
export * from './store/node-support'
export * from './store/threadpool'
export * from './store/wal-flushes'

export const name = 'taskward-host'
export const inject = ['database', 'server']

export interface Config {
  agents: Agents.Config
  connection: Connection.Config
  operator: Operator.Config
  projections: Projections.Config
}

export const Config: Schema<Partial<Config>, Config> = strictConfig('host', Schema.object({
  agents: Agents.Config,
  connection: Connection.Config,
  operator: Operator.Config,
  projections: Projections.Config,
}) as any)

/** The host kernel: every service a DSH-style host provides, over `database` and `server`. */
export function apply(ctx: Context, loaded: Config) {
  const config = loadedConfig('host', loaded) as Config
  ctx.plugin(Sessions)
  ctx.plugin(Projections, config.projections)
  ctx.plugin(Tools)
  ctx.plugin(Models)
  ctx.plugin(Agents, config.agents)
  ctx.plugin(Commands)
  ctx.plugin(Connection, config.connection)
  ctx.plugin(Operator, config.operator)
  ctx.plugin({ name: 'taskward-file-tools', inject: ['tools'], apply: registerFileTools })
  ctx.plugin({ name: 'taskward-store-routes', inject: ['connection', 'database', 'server'], apply: storeRoutes })
  stopWithDaemon(ctx)
}

/**
 * Under the cordis CLI the host runs in a forked worker. If the CLI goes away without signalling it
 * (killed, or its parent was), the IPC channel closes: shut down cleanly instead of living on orphaned.
 */
function stopWithDaemon(ctx: Context) {
  if (!process.send || !process.connected) return
  const onDisconnect = () => process.kill(process.pid, 'SIGTERM')
  process.once('disconnect', onDisconnect)
  ctx.on('dispose', () => {
    process.off('disconnect', onDisconnect)
  })
}
