import { TaskwardError } from '@taskward/protocol'

/**
 * Taskward's `models` inside DSH: one route, `dsh`, meaning the model DSH is configured with. Turns
 * (the main agent's and reviewers') run in DSH's own loop, so no adapter is handed out here.
 */
export class DshModelsContract {
  readonly routes = ['dsh']

  list() {
    return [...this.routes]
  }

  has(route: string) {
    return this.routes.includes(route)
  }

  get(route: string): never {
    throw new TaskwardError('MODEL_NOT_FOUND', `Inside DSH, turns run on DSH's configured model (route "dsh"); "${route}" has no adapter here.`)
  }
}
