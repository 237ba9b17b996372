/**
 * The pure parts of the scale benchmark's paced runs (no I/O, no clock): a seeded heavy-tailed step
 * latency, and the host-added latency per step computed from what the endpoint saw of each request.
 * benchmarks/scale-endpoint.ts draws its delays and computes its gaps with them; tests/scale-pace.spec.ts
 * checks both.
 */

/**
 * mulberry32: a well-known 32-bit seeded generator (uniform in [0, 1)). Not for cryptography; here
 * only so that two runs with one seed draw the same latencies.
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The standard normal's 0.99 quantile. */
export const Z99 = 2.3263478740408408

export interface PaceSpec {
  /** The median step latency (ms). */
  medianMs: number
  /** The 99th-percentile step latency (ms); above the median. */
  p99Ms: number
  seed: number
}

/** A lognormal's parameters from its median and 99th percentile: median = e^mu, p99 = e^(mu + Z99 sigma). */
export function lognormalOf({ medianMs, p99Ms }: Pick<PaceSpec, 'medianMs' | 'p99Ms'>) {
  if (!(medianMs > 0) || !(p99Ms > medianMs)) throw new RangeError(`a paced endpoint needs 0 < median < p99 (got median ${medianMs} ms, p99 ${p99Ms} ms)`)
  return { mu: Math.log(medianMs), sigma: Math.log(p99Ms / medianMs) / Z99 }
}

/**
 * Step latencies (ms) drawn from the lognormal with that median and p99, from a mulberry32 stream
 * seeded with `seed` (Box–Muller over two uniforms): one seed, one sequence.
 */
export function paceSampler(spec: PaceSpec): () => number {
  const { mu, sigma } = lognormalOf(spec)
  const uniform = mulberry32(spec.seed)
  let spare: number | undefined
  const normal = () => {
    if (spare !== undefined) {
      const value = spare
      spare = undefined
      return value
    }
    const u1 = 1 - uniform() // (0, 1]: log(0) never happens
    const u2 = uniform()
    const radius = Math.sqrt(-2 * Math.log(u1))
    spare = radius * Math.sin(2 * Math.PI * u2)
    return radius * Math.cos(2 * Math.PI * u2)
  }
  return () => Math.exp(mu + sigma * normal())
}

/** What the endpoint keeps of one request: its session, when it came and ended, what it carried and answered. */
export interface StepRecord {
  /** The session the request belongs to (a workspace and role, or one bare loop). */
  key: string
  /** The task the session works for (the workspace: a main session and its reviewers share it). */
  task: string
  /** When the request arrived, and when its answer ended (ms, one clock). */
  receivedAt: number
  endedAt?: number
  /**
   * The tool whose result is the request's last message: the request is the next step of the same turn,
   * sent as soon as the client had the answer and ran the tool. Undefined for a turn's first request.
   */
  tool?: string
  /** What the answer did: the first tool it called, or 'text'. */
  answered?: string
}

/** The tool whose result a chat request's last message carries ('?' when the call is not found), else undefined. */
export function carriedTool(messages: any[]): string | undefined {
  const last = messages.at(-1)
  if (last?.role !== 'tool') return undefined
  const call = messages.findLast((m: any) => m.role === 'assistant' && m.tool_calls?.length)?.tool_calls?.find((c: any) => c.id === last.tool_call_id)
  return call?.function?.name ?? '?'
}

/**
 * A person's command to a task (the harness's `/task approve` after a plan review): a request it leads
 * to (the agent's turn starting) is measured from the command, not from the answer before it — the time
 * a person takes to click is theirs, not the host's; what the host does with the click is counted. The
 * host's part before the command is a gap of its own, `<answer> → awaiting <command>`: from the answer
 * the host acted on to when it showed the task waiting for the command (`shownAt`; the verdict applied,
 * the task awaiting approval) — not to the command, which comes after the harness noticed.
 */
export interface UserCommand {
  task: string
  /** When the command was given (ms, the records' clock). */
  at: number
  /** What it was (`/task approve`): the gap's `after`. */
  what: string
  /**
   * When the host showed the task waiting for it (ms, the records' clock, read by the host's process:
   * see `CLOCK_SLACK_MS`); without it, `at`.
   */
  shownAt?: number
}

/**
 * How much later (ms) than a command's `shownAt` the answer the host showed may be recorded as ending,
 * and still be taken as what the host acted on. Two processes read the two times (the endpoint its
 * answer's end, the host when it showed the task waiting, each `performance.timeOrigin +
 * performance.now()`), and the endpoint notes an answer's end only after it has written the last bytes,
 * which the host may have read and acted on first: the answer the host showed can be recorded ending a
 * few milliseconds after it was shown. Without the slack an older answer was taken instead, and the gap
 * was the whole review turn (15.5 s for what took the host under 1 s).
 */
export const CLOCK_SLACK_MS = 50

export interface StepGaps {
  /** Every gap from a session's answer ending to its next request arriving (turn starts included). */
  sameSession: number[]
  /** Those gaps whose request carries the answer's tool result (the next step of the same turn). */
  inTurn: { gap: number, tool: string }[]
  /**
   * The host-added latency per step: from an answer's end to the next request it leads to, labelled
   * with what that answer did (`after`) and what the request is (`next`: `in turn`, or `<role> turn start`). A request carrying tool results follows its own session's last
   * answer; a turn's first request (a review starting, the agent resuming after one) follows the latest
   * answer of its task that had ended when it arrived, or a person's command to that task given later
   * (`UserCommand`) — the event the host was acting on. A command is also the end of a gap from the
   * latest answer of its task that had ended before the host showed the task waiting for it (or up to
   * `CLOCK_SLACK_MS` after, by the records: then the gap is 0), to a request that came before the
   * command, and after the task's previous command (`next`: `awaiting <command>`; `awaiting` counts
   * them: they are not steps).
   */
  hostAdded: { gap: number, after: string, next: string }[]
  /** How many of `hostAdded` end where the host showed the task waiting for a person (not a request). */
  awaiting: number
}

/** What a request was, for the gap before it: the next step of its turn, or the start of a turn of its role. */
function nextOf(record: StepRecord): string {
  return record.tool !== undefined ? 'in turn' : `${record.key.slice(record.key.indexOf('\u0000') + 1)} turn start`
}

/**
 * The gaps of `records` (in arrival order) and `commands`. A request whose session's previous request had
 * not ended when it came (a retry over a broken connection) opens no gap: no answer of its own ended
 * before it; nor does a task's first request (nothing the model said led to it) unless a person's
 * command to that task came before it — then it is measured from the command.
 */
export function stepGaps(records: StepRecord[], commands: UserCommand[] = []): StepGaps {
  const commandsOf = new Map<string, UserCommand[]>()
  for (const command of commands) commandsOf.set(command.task, [...commandsOf.get(command.task) ?? [], command])
  const previous = new Map<string, StepRecord>()
  const ofTask = new Map<string, StepRecord[]>()
  const gaps: StepGaps = { sameSession: [], inTurn: [], hostAdded: [], awaiting: 0 }
  for (const record of records) {
    const before = previous.get(record.key)
    previous.set(record.key, record)
    const earlier = ofTask.get(record.task) ?? []
    ofTask.set(record.task, [...earlier, record])
    if (before && (before.endedAt === undefined || before.endedAt > record.receivedAt)) continue
    if (before) {
      const gap = record.receivedAt - before.endedAt!
      gaps.sameSession.push(gap)
      if (record.tool !== undefined) {
        gaps.inTurn.push({ gap, tool: record.tool })
        gaps.hostAdded.push({ gap, after: before.answered ?? '?', next: nextOf(record) })
        continue
      }
    }
    // No slack here (unlike a command's `shownAt`): one clock, and the endpoint notes an answer's end
    // before it can read the request that answer led to.
    let cause: StepRecord | undefined
    for (const other of earlier) {
      if (other.endedAt !== undefined && other.endedAt <= record.receivedAt && (!cause || other.endedAt > cause.endedAt!)) cause = other
    }
    let command: UserCommand | undefined
    for (const given of commandsOf.get(record.task) ?? []) {
      if (given.at <= record.receivedAt && (!command || given.at > command.at)) command = given
    }
    if (command && (!cause || command.at >= cause.endedAt!)) gaps.hostAdded.push({ gap: record.receivedAt - command.at, after: command.what, next: nextOf(record) })
    else if (cause) gaps.hostAdded.push({ gap: record.receivedAt - cause.endedAt!, after: cause.answered ?? '?', next: nextOf(record) })
  }
  // The host's part before each command: from the answer it acted on to the task shown waiting. An
  // answer recorded ending up to CLOCK_SLACK_MS after `shown` may be that answer (two clocks: a gap of
  // 0); one to a request that came after the task was shown waiting (or after the command) was not
  // what the host showed — the command's own turn, say (an unpaced endpoint answers within the slack). An answer that ended before the task's previous
  // command was that command's (the time between two commands is the person's).
  for (const command of commands) {
    const shown = command.shownAt ?? command.at
    const previous = Math.max(-Infinity, ...(commandsOf.get(command.task) ?? []).filter((other) => other.at < command.at).map((other) => other.at))
    let cause: StepRecord | undefined
    // The answer whose end is nearest to `shown`: within the slack after it, or the latest before it.
    for (const other of ofTask.get(command.task) ?? []) {
      if (other.endedAt === undefined || other.endedAt > shown + CLOCK_SLACK_MS || other.receivedAt >= Math.min(command.at, shown)) continue
      if (!cause || Math.abs(shown - other.endedAt) < Math.abs(shown - cause.endedAt!)) cause = other
    }
    if (!cause || cause.endedAt! < previous) continue
    gaps.hostAdded.push({ gap: Math.max(0, shown - cause.endedAt!), after: cause.answered ?? '?', next: `awaiting ${command.what}` })
    gaps.awaiting++
  }
  return gaps
}

/**
 * The host-added gaps split by what the host did in them: `checks` follow an answer whose tool runs
 * recovery's sandboxed checks before it returns (real work, which a real check costs far more of;
 * reported, not held against the plugins), `host` are all the others.
 */
export function splitByChecks(hostAdded: { gap: number, after: string }[], checkTools: readonly string[]) {
  const checks = hostAdded.filter(({ after }) => checkTools.includes(after)).map(({ gap }) => gap)
  const host = hostAdded.filter(({ after }) => !checkTools.includes(after)).map(({ gap }) => gap)
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
  const total = sum(checks) + sum(host)
  return { host, checks, checksShare: total ? sum(checks) / total : 0 }
}

/** The paced hosts' store durability from SCALE_PACE_DURABILITY's value: fsync (unset: the default) or os; anything else is refused. */
export function pacedDurability(value: string | undefined): 'fsync' | 'os' {
  if (value === undefined) return 'fsync'
  if (value !== 'fsync' && value !== 'os') throw new Error(`SCALE_PACE_DURABILITY takes fsync (the default) or os, not ${JSON.stringify(value)}.`)
  return value
}
