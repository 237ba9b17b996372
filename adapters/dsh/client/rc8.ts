import { createElement as h } from 'react'
import { CARD_KIND, cardState, carriedRecord, MilestoneCard, type CardState } from './cards'
import { TaskDock } from './dock'
import { TaskPanel } from './panel'
import { PANEL_CSS } from './styles'

/*
 * THE seam to DSH rc.8's client (docs/subsystems/client-modules.md, packages/client/*): which slots the
 * panel takes, the service names the module injects, how the page's React arrives (the module table's
 * `require('react')`, never a copy of our own) and where Taskward's routes are (`<meta
 * name="taskward-base">`, which the adapter adds to DSH's index page). A later DSH changes this file.
 */

/** The client context services the module waits for (cordis `inject`). */
export const CLIENT_INJECT = ['slots', 'conversationEvents']

/** Slot names of rc.8's conversation UI. */
export const SLOTS = {
  /** One tab of the session's view ring (beside Chat and Trajectory): the whole panel. */
  view: 'conversation.view',
  /** A full-width row above the composer: the one-line task bar. */
  dock: 'conversation.input.dock',
  /** The chat's node renderers, keyed by node kind: the milestone cards. */
  chatNode: 'conversation.chat.node',
} as const

interface ClientSlots {
  inject(name: string, body: () => unknown): unknown
  register(entry: Record<string, unknown>, component: unknown): unknown
}

/** rc.8's conversation event registry (ConversationNodeDefinition, runtime contract/conversation.ts). */
interface ConversationEvents {
  register(definition: Record<string, unknown>): unknown
}

export interface ClientContext {
  slots: ClientSlots
  conversationEvents: ConversationEvents
}

interface Match { event: { seq: number, type: string, data?: any }, location?: unknown }

/** One chat node per Taskward record that marks a milestone, anchored at the record's seq. */
const milestoneDefinition = {
  kind: CARD_KIND,
  target: 'chat',
  match: (event: { seq: number, type: string, data?: any }) => carriedRecord(event) === undefined ? null : { id: String(event.seq), role: 'start' },
  start: (_context: unknown, match: Match, reader: { previous<S>(kind: string): { state: S } | undefined }) =>
    cardState(carriedRecord(match.event), reader.previous<CardState>(CARD_KIND)?.state, match.event.seq),
  update: (context: { state: CardState }) => context.state,
  buildViewNode: (context: { key: string, id: string, state?: CardState, start?: Match }) => {
    if (!context.state?.milestones.length) return null
    return {
      key: context.key, kind: CARD_KIND, id: context.id, target: 'chat', anchorSeq: context.state.seq,
      location: context.start?.location ?? { kind: 'unresolved' }, visibility: 'visible',
      data: { milestones: context.state.milestones },
    }
  },
}

/** Where Taskward's routes are on this server (the adapter's `prefix`). */
export function taskwardBase(): string {
  const meta = document.querySelector('meta[name="taskward-base"]')
  const base = meta?.getAttribute('content') ?? '/taskward'
  return /^\/[a-z][a-z0-9-]*$/.test(base) ? base : '/taskward'
}

function addStyles() {
  if (document.querySelector('style[data-plugin-css="taskward-dsh/panel.css"]')) return
  const tag = document.createElement('style')
  tag.dataset.plugin = 'taskward-dsh'
  tag.dataset.pluginCss = 'taskward-dsh/panel.css'
  tag.textContent = PANEL_CSS
  document.head.appendChild(tag)
}

export function applyClient(ctx: ClientContext) {
  addStyles()
  const base = taskwardBase()
  const sessionOf = (props: Record<string, unknown>) => String(props.taskwardSessionId ?? props.sessionId ?? '')
  const View = (props: Record<string, unknown>) => h(TaskPanel, { base, sessionId: sessionOf(props) })
  const Dock = (props: Record<string, unknown>) => h(TaskDock, { base, sessionId: sessionOf(props) })
  ctx.slots.inject(SLOTS.view, () => ctx.slots.register({
    name: SLOTS.view, id: 'taskward', order: 20, label: () => 'Task',
    inject: (sessionId: string) => ({ taskwardSessionId: sessionId }),
  }, View))
  ctx.conversationEvents.register(milestoneDefinition)
  ctx.slots.inject(SLOTS.chatNode, () => ctx.slots.register({ name: SLOTS.chatNode, key: CARD_KIND }, MilestoneCard))
  ctx.slots.inject(SLOTS.dock, () => ctx.slots.register({
    name: SLOTS.dock, id: 'taskward', order: 5,
    inject: (sessionId: string) => ({ taskwardSessionId: sessionId }),
  }, Dock))
}
