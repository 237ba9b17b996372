import { Context, Service } from 'cordis'
import { TaskwardError } from '@taskward/protocol'
import { ScriptedModel } from './scripted'
import type { ModelAdapter } from './types'

declare module 'cordis' {
  interface Context {
    models: Models
  }
}

/** Model adapters by route. The deterministic `scripted` route is always there. */
export class Models extends Service {
  readonly scripted = new ScriptedModel()
  private adapters = new Map<string, ModelAdapter>([['scripted', this.scripted]])

  constructor(ctx: Context) {
    super(ctx, 'models', true)
  }

  /** Register an adapter under a route; disposing the registering plugin removes it. */
  register(route: string, adapter: ModelAdapter) {
    if (this.adapters.has(route)) throw new TaskwardError('CONFIG_INVALID', `Model route "${route}" is already registered.`)
    this.adapters.set(route, adapter)
    return this.ctx.effect(() => () => {
      if (this.adapters.get(route) === adapter) this.adapters.delete(route)
    })
  }

  get(route: string): ModelAdapter {
    const adapter = this.adapters.get(route)
    if (!adapter) {
      throw new TaskwardError('MODEL_NOT_FOUND', `No model route "${route}"; known routes: ${[...this.adapters.keys()].join(', ')}.`)
    }
    return adapter
  }

  routes() {
    return [...this.adapters.keys()]
  }
}
