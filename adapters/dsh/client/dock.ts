import { createElement as h, useSyncExternalStore } from 'react'
import { storeFor } from './store'

/*
 * The one-line task bar above DSH's composer: the phase in words, the acceptance cycle, what waits for
 * the user, and the command actions allowed now (the same `actions` the panel shows). The impact panel
 * with Confirm/Decline is in the Task view, which the bar names.
 */
export function TaskDock({ base, sessionId }: { base: string, sessionId: string }) {
  const store = storeFor(base, sessionId)
  const state = useSyncExternalStore(store.subscribe, store.snapshot)
  const task = state.view?.current
  if (!task) return null
  const waiting = state.view!.awaitingDecision ? state.view!.proposals.find((p) => p.id === state.view!.awaitingDecision) : undefined
  return h('div', { className: 'tw-dock', role: 'region', 'aria-label': 'Taskward task', 'data-phase': task.phase },
    h('strong', null, 'Task: '),
    h('span', { className: `tw-phase tw-ph-${task.phase}` }, task.phaseLabel),
    task.pauseReasonLabel ? h('span', null, task.pauseReasonLabel) : null,
    task.acceptanceCycle > 1 ? h('span', null, `cycle ${task.acceptanceCycle}`) : null,
    waiting ? h('span', null, `Repair "${waiting.title}" waits for your decision in the Task view.`) : null,
    state.view!.actions.filter((a) => a.command && a.id !== 'consult').map((action) => h('button', {
      key: action.id, type: 'button', disabled: state.busy, 'data-action': action.id,
      className: action.id === 'approve' || action.id === 'resume' ? 'tw-primary' : undefined,
      onClick: () => store.command(action),
    }, action.label)))
}
