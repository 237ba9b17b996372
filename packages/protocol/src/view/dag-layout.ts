import { dependencyMap } from '../task/dag'
import type { TaskPlan } from '../task/types'

/*
 * A compact left-to-right layout of a plan's DAG for the console's and the DSH panel's SVG: a node's column is its
 * longest dependency path from a root, rows follow plan order, short columns are centred. Pure and
 * deterministic, so both renderers and the tests see the same coordinates.
 */

export interface DagNodeBox {
  id: string
  title: string
  /** Column: the longest dependency path from a root (roots are 0). */
  layer: number
  /** Position within the column, in plan order. */
  row: number
  x: number
  y: number
  width: number
  height: number
}

export interface DagEdge {
  from: string
  to: string
  /** SVG path data from the dependency's right edge to the dependant's left edge. */
  path: string
}

export interface DagLayout {
  width: number
  height: number
  nodes: DagNodeBox[]
  edges: DagEdge[]
}

export interface DagLayoutOptions {
  nodeWidth?: number
  nodeHeight?: number
  gapX?: number
  gapY?: number
  padding?: number
}

/** Column of every node: 0 for roots, else 1 + the deepest dependency (the plan must be acyclic). */
export function dagLayers(plan: TaskPlan): Map<string, number> {
  const deps = dependencyMap(plan)
  const layers = new Map<string, number>()
  const visiting = new Set<string>()
  const layerOf = (id: string): number => {
    const known = layers.get(id)
    if (known !== undefined) return known
    if (visiting.has(id)) throw new Error(`The plan has a dependency cycle through "${id}".`)
    visiting.add(id)
    const layer = Math.max(-1, ...(deps.get(id) ?? []).map(layerOf)) + 1
    visiting.delete(id)
    layers.set(id, layer)
    return layer
  }
  for (const node of plan.nodes) layerOf(node.id)
  return layers
}

export function layoutDag(plan: TaskPlan, options: DagLayoutOptions = {}): DagLayout {
  const { nodeWidth = 188, nodeHeight = 62, gapX = 56, gapY = 20, padding = 12 } = options
  const layers = dagLayers(plan)
  const columns: string[][] = []
  for (const node of plan.nodes) (columns[layers.get(node.id)!] ??= []).push(node.id)
  const tallest = Math.max(0, ...columns.map((column) => column.length))
  const boxes = new Map<string, DagNodeBox>()
  columns.forEach((column, layer) => {
    const offset = (tallest - column.length) / 2
    column.forEach((id, row) => {
      boxes.set(id, {
        id,
        title: plan.nodes.find((node) => node.id === id)!.title,
        layer,
        row,
        x: padding + layer * (nodeWidth + gapX),
        y: padding + (row + offset) * (nodeHeight + gapY),
        width: nodeWidth,
        height: nodeHeight,
      })
    })
  })
  const edges: DagEdge[] = []
  for (const [to, deps] of dependencyMap(plan)) {
    const target = boxes.get(to)!
    for (const from of deps) {
      const source = boxes.get(from)!
      const x1 = source.x + source.width
      const y1 = source.y + source.height / 2
      const x2 = target.x
      const y2 = target.y + target.height / 2
      const mid = (x1 + x2) / 2
      edges.push({ from, to, path: `M${x1} ${y1} C${mid} ${y1} ${mid} ${y2} ${x2} ${y2}` })
    }
  }
  return {
    width: columns.length ? padding * 2 + columns.length * nodeWidth + (columns.length - 1) * gapX : 0,
    height: tallest ? padding * 2 + tallest * nodeHeight + (tallest - 1) * gapY : 0,
    nodes: plan.nodes.map((node) => boxes.get(node.id)!),
    edges,
  }
}
