// The browser half of the Taskward bundle for DSH's web app (`exports["./client"]`, served by DSH at
// /plugins/taskward-dsh/client.js): a client plugin that puts the Taskward panel into the session's
// slots. Built by scripts/dsh/pack-client.mjs; rc.8's specifics are in rc8.ts.
import { applyClient, CLIENT_INJECT, type ClientContext } from './rc8'

export const name = 'taskward-panel'
export const inject = CLIENT_INJECT
export function apply(ctx: ClientContext) {
  applyClient(ctx)
}
