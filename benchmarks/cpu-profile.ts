/*
 * CPU profile attribution for benchmarks/scale.bench.ts `--profile`: samples of the whole run, summed by
 * our functions, their callers, packages, cordis internals, and the longest busy stretches.
 */
import { writeFile } from 'node:fs/promises'
import { Session as Inspector } from 'node:inspector/promises'

export async function profiled<T>(run: () => Promise<T>): Promise<{ result: T, top: string[], callers: string[], chains: string[], packages: string[], cordis: string[], longest: string[] }> {
  const inspector = new Inspector()
  inspector.connect()
  await inspector.post('Profiler.enable')
  await inspector.post('Profiler.setSamplingInterval', { interval: 500 })
  await inspector.post('Profiler.start')
  // SCALE_HEAP_OUT=<file>.heapprofile: every allocation sampled (collected ones too: what the collector
  // works through, not only what stays), for DevTools' Memory tab or a script of your own.
  const heapOut = process.env.SCALE_HEAP_OUT
  if (heapOut) {
    await inspector.post('HeapProfiler.enable')
    await inspector.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as any)
  }
  const result = await run()
  const { profile } = await inspector.post('Profiler.stop')
  if (heapOut) await writeFile(heapOut, JSON.stringify((await inspector.post('HeapProfiler.stopSampling')).profile))
  inspector.disconnect()
  // SCALE_PROFILE_OUT=<file>.cpuprofile: the raw profile too, for Chrome DevTools or a script of your own.
  if (process.env.SCALE_PROFILE_OUT) await writeFile(process.env.SCALE_PROFILE_OUT, JSON.stringify(profile))
  const self = new Map<string, number>()
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const label = (frame: { functionName: string, url: string, lineNumber: number }) => {
    const where = frame.url ? `${frame.url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '')}:${frame.lineNumber + 1}` : ''
    return `${frame.functionName || '(anonymous)'} ${where}`.trim()
  }
  /** The nearest frame of the project's own code (packages/, plugins/) at or above a sample. */
  const ours = (id: number) => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { url } = byId.get(at)!.callFrame
      if (/\/(packages|plugins)\//.test(url) && !url.includes('node_modules')) return label(byId.get(at)!.callFrame)
    }
    return '(no project frame)'
  }
  const packageOf = (url: string) => /\/((?:packages|plugins)\/[^/]+)\//.exec(url.includes('node_modules') ? '' : url)?.[1]
  /**
   * The project frames above a sample, nearest first (`fn package` each, at most 5): which path of our
   * code a library cost belongs to. And every package on the stack (inclusive cost).
   */
  const chainOf = (id: number) => {
    const chain: string[] = []
    const packages = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame
      const pkg = packageOf(frame.url)
      if (!pkg) continue
      packages.add(pkg)
      const step = `${frame.functionName || '(anonymous)'} ${pkg}`
      if (chain.length < 5 && chain.at(-1) !== step) chain.push(step)
    }
    return { chain: chain.join(' < ') || '(no project frame)', packages }
  }
  /** Whether a sample is inside cordis (its context getters and tracing proxies cost a stack capture each). */
  const insideCordis = (id: number) => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { url } = byId.get(at)!.callFrame
      if (url.includes('/@cordisjs/') || url.includes('/cordis/')) return true
      if (packageOf(url)) return false
    }
    return false
  }
  const byCordisCaller = new Map<string, number>()
  const byCaller = new Map<string, number>()
  const byChain = new Map<string, number>()
  const byPackage = new Map<string, number>()
  const counts = new Map<number, number>()
  for (const sample of profile.samples ?? []) counts.set(sample, (counts.get(sample) ?? 0) + 1)
  let total = 0
  for (const [id, hits] of counts) {
    const name = label(byId.get(id)!.callFrame)
    self.set(name, (self.get(name) ?? 0) + hits)
    const caller = ours(id)
    byCaller.set(caller, (byCaller.get(caller) ?? 0) + hits)
    const { chain, packages } = chainOf(id)
    byChain.set(chain, (byChain.get(chain) ?? 0) + hits)
    if (insideCordis(id)) byCordisCaller.set(caller, (byCordisCaller.get(caller) ?? 0) + hits)
    for (const pkg of packages) byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + hits)
    total += hits
  }
  const format = (entries: Map<string, number>, count: number) => [...entries].sort((a, b) => b[1] - a[1]).slice(0, count)
    .map(([name, hits]) => `${(100 * hits / total).toFixed(1).padStart(5)} %  ${name}`)
  return {
    result, top: format(self, 25), callers: format(byCaller, 25), chains: format(byChain, 30), packages: format(byPackage, 20), cordis: format(byCordisCaller, 15),
    longest: longestTasks(profile, byId, (id) => ours(id)),
  }
}

/**
 * The longest stretches of the main thread without a break (no idle sample), as the samples show
 * them: each stretch's length and the project frames it spent most samples under. A synchronous task
 * that long delays every session's next step at once.
 */
function longestTasks(profile: any, byId: Map<number, any>, ours: (id: number) => string): string[] {
  const samples: number[] = profile.samples ?? []
  const deltas: number[] = profile.timeDeltas ?? []
  const idle = (id: number) => ['(idle)', '(program)'].includes(byId.get(id)!.callFrame.functionName)
  const stretches: { ms: number, frames: Map<string, number> }[] = []
  let current: { ms: number, frames: Map<string, number> } | undefined
  for (let i = 0; i < samples.length; i++) {
    const ms = (deltas[i + 1] ?? 0) / 1000
    if (idle(samples[i])) {
      if (current) stretches.push(current)
      current = undefined
      continue
    }
    current ??= { ms: 0, frames: new Map() }
    current.ms += ms
    const frame = ours(samples[i])
    current.frames.set(frame, (current.frames.get(frame) ?? 0) + 1)
  }
  if (current) stretches.push(current)
  return stretches.sort((a, b) => b.ms - a.ms).slice(0, 8).map(({ ms, frames }) => {
    const top = [...frames].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([frame, hits]) => `${frame} (${hits})`).join(', ')
    return `${ms.toFixed(1).padStart(7)} ms  ${top}`
  })
}
