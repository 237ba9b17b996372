// The plan's DAG as SVG, from the layout the server computed (@taskward/protocol, view/dag-layout.ts).
// Nodes are coloured by run status (class `st-<status>`), show their attempt and a rework mark, and
// the nodes a repair proposal affects are highlighted (roots marked separately).
import { s } from './dom.js'

export function renderDag(task, { affected = [], roots = [], label } = {}) {
  const layout = task.layout
  if (!layout || !layout.nodes.length) return null
  const byId = new Map(task.nodes.map((node) => [node.id, node]))
  const affectedSet = new Set(affected)
  const rootSet = new Set(roots)
  const titleId = `dag-title-${task.id}-${label ?? 'plan'}`
  const svg = s('svg', {
    class: 'dag',
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    width: layout.width,
    height: layout.height,
    role: 'img',
    'aria-labelledby': titleId,
    'data-task-id': task.id,
  }, s('title', { id: titleId }, describe(task, affectedSet)))
  svg.append(s('defs', {}, s('marker', { id: `arrow-${task.id}-${label ?? 'plan'}`, viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 8, markerHeight: 8, orient: 'auto' },
    s('path', { d: 'M0 0 L8 4 L0 8 z', class: 'arrow' }))))
  for (const edge of layout.edges) {
    const hot = affectedSet.has(edge.from) && affectedSet.has(edge.to)
    svg.append(s('path', { d: edge.path, class: ['edge', hot && 'edge-affected'], 'marker-end': `url(#arrow-${task.id}-${label ?? 'plan'})` }))
  }
  for (const box of layout.nodes) {
    const node = byId.get(box.id) ?? {}
    const status = node.status ?? 'unplanned'
    const group = s('g', {
      class: ['node', `st-${status}`, affectedSet.has(box.id) && 'affected', rootSet.has(box.id) && 'root'],
      'data-node-id': box.id,
      'data-status': status,
      'data-affected': affectedSet.has(box.id) ? 'true' : 'false',
      transform: `translate(${box.x} ${box.y})`,
    })
    group.append(s('rect', { width: box.width, height: box.height, rx: 8 }))
    group.append(s('text', { x: 10, y: 18, class: 'node-id' }, box.id, rootSet.has(box.id) ? ' ◆ root' : affectedSet.has(box.id) ? ' • affected' : ''))
    group.append(s('text', { x: 10, y: 35, class: 'node-title' }, clip(box.title, 28)))
    const meta = [node.attempt ? `attempt ${node.attempt}` : '', node.statusLabel ?? '', node.reworkReason ? '↻ rework' : '']
      .filter(Boolean).join(' · ')
    group.append(s('text', { x: 10, y: 52, class: 'node-meta' }, meta))
    group.append(s('title', {}, `${box.id}: ${box.title}${node.reworkReason ? ` — rework: ${node.reworkReason}` : ''}`))
    svg.append(group)
  }
  return svg
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

function describe(task, affected) {
  const parts = task.nodes.map((node) => `${node.id} ${node.statusLabel}${affected.has(node.id) ? ' (affected)' : ''}`)
  return `Plan DAG of task ${task.id}: ${parts.join(', ')}`
}
