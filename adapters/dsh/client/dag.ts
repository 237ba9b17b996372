import { createElement as h } from 'react'
import type { TaskDetailView } from '@taskward/protocol'

/*
 * The plan DAG as SVG from the layout protocol computed (view/dag-layout.ts) — the console's layout,
 * drawn by this renderer: nodes coloured and labelled by status, the nodes a repair proposal affects
 * marked (roots separately), a text title for screen readers.
 */
export function Dag({ task, affected = [], roots = [], label }: { task: TaskDetailView, affected?: string[], roots?: string[], label: string }) {
  const layout = task.layout
  if (!layout?.nodes.length) return null
  const byId = new Map(task.nodes.map((node) => [node.id, node]))
  const hot = new Set(affected)
  const rootSet = new Set(roots)
  const marker = `tw-arrow-${task.id}-${label}`
  const title = `Plan DAG of task ${task.id}: ${task.nodes.map((n) => `${n.id} ${n.statusLabel}${hot.has(n.id) ? ' (affected)' : ''}`).join(', ')}`
  return h('div', { className: 'tw-scroll', tabIndex: 0, role: 'region', 'aria-label': `Plan DAG (${label})` },
    h('svg', { className: 'tw-dag', viewBox: `0 0 ${layout.width} ${layout.height}`, width: layout.width, height: layout.height, role: 'img', 'aria-label': title },
      h('defs', null, h('marker', { id: marker, viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 8, markerHeight: 8, orient: 'auto' },
        h('path', { d: 'M0 0 L8 4 L0 8 z', className: 'tw-arrow' }))),
      layout.edges.map((edge) => h('path', {
        key: `${edge.from}-${edge.to}`, d: edge.path, markerEnd: `url(#${marker})`,
        className: hot.has(edge.from) && hot.has(edge.to) ? 'tw-edge tw-edge-hot' : 'tw-edge',
      })),
      layout.nodes.map((box) => {
        const node = byId.get(box.id)
        const status = node?.status ?? 'unplanned'
        const meta = [node?.attempt ? `attempt ${node.attempt}` : '', node?.statusLabel ?? '', node?.reworkReason ? '↻ rework' : ''].filter(Boolean).join(' · ')
        return h('g', {
          key: box.id, transform: `translate(${box.x} ${box.y})`, 'data-node-id': box.id, 'data-status': status,
          className: `tw-node tw-st-${status}${hot.has(box.id) ? ' tw-affected' : ''}${rootSet.has(box.id) ? ' tw-root' : ''}`,
        },
        h('rect', { width: box.width, height: box.height, rx: 8 }),
        h('text', { x: 10, y: 18, className: 'tw-node-id' }, box.id, rootSet.has(box.id) ? ' ◆ root' : hot.has(box.id) ? ' • affected' : ''),
        h('text', { x: 10, y: 35 }, box.title.length > 28 ? `${box.title.slice(0, 27)}…` : box.title),
        h('text', { x: 10, y: 52, className: 'tw-node-meta' }, meta))
      })))
}
