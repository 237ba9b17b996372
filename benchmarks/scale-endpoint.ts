/**
 * The scale benchmark's model endpoint, in a process of its own so that the host's process measures
 * only the host: the loopback OpenAI mock playing a competent agent through a one-node supervised task
 * (testkit's `taskPlayer`), optionally waiting `delay` ms before each answer.
 *
 * It prints `ready <baseURL>`, then answers one line per command read from stdin:
 *   delay <ms>     wait that long before each answer                → `ok`
 *   pace <seed> <median ms> <p99 ms>  wait a lognormal latency before each answer, drawn in arrival
 *                  order from a generator seeded with <seed> (benchmarks/scale-pace.ts) → `ok`
 *   capture on     keep every request body, with its session's key   → `ok`
 *   dump <file>    write the kept bodies (JSON) to <file>, stop keeping → `ok`
 *   user <JSON>    a person's command to a task: {"task": workspace, "at": epoch ms, "what": "/task approve",
 *                  "shown": epoch ms the host showed the task waiting for it}; the turn it starts is
 *                  measured from it (scale-pace.ts `UserCommand`) → `ok`
 *   stats          `stats {served, inTurn: [...], byTool: {name: [...]}, hostAdded: {after: [...]}, hostAddedPairs: {'after → next': [...]}, sameSession: [...], cpuMs, aborted}`
 *                  and start counting afresh; `streaming`: the requests not ended nor aborted yet
 * A request's session is its `x-scale-session` header when it has one (the bare loop's), else its
 * workspace directory and role (from the system message); a gap is the time from the end of a session's
 * answer to that session's next request arriving, "in turn" when that request carries tool results (the
 * next step of the same turn): `stepGaps` in benchmarks/scale-pace.ts. `stats` also counts the requests
 * whose client went away before the answer ended (`aborted`).
 */
import { createInterface } from 'node:readline'
import { writeFileSync } from 'node:fs'
import { OpenAIMock, renderPrompt, taskPlayer, type MockReply, type MockRequest, type MockStream } from '@taskward/testkit'
import { carriedTool, paceSampler, stepGaps, type StepRecord, type UserCommand } from './scale-pace'

const player = taskPlayer({ plan: { acceptanceCriteria: ['a.txt says done'], nodes: [{ id: 'a', title: 'write a' }] } })

/**
 * Usage at a few characters per token of the prompt as a template renders it. The mock's own count
 * (a real tokenizer over the whole prompt, every request) costs this process ~5 ms per answer on the
 * cores the host runs on; a real endpoint's counting costs the host nothing.
 */
function withUsage(request: MockRequest, reply: MockReply): MockReply {
  if (reply.kind !== undefined && reply.kind !== 'stream') return reply
  const stream: MockStream = reply
  const output = (stream.text ?? '').length + JSON.stringify(stream.toolCalls ?? []).length
  return { ...stream, usage: { prompt_tokens: Math.ceil(renderPrompt(request.body).length / 4), completion_tokens: Math.ceil(output / 4) } }
}
// A host saturated by hundreds of sessions drops its idle connections late: with Node's 5 s keep-alive
// it reused one the endpoint was closing (a connection error that voided a 200-session run).
const mock = await OpenAIMock.start({ keepAliveTimeoutMs: 120_000 })
let delayMs = 0
/** A paced endpoint's next step latency (ms), when `pace` set one. */
let paced: (() => number) | undefined
let captured: { key: string, body: unknown }[] | undefined
let served = 0
/** The endpoint's own CPU since the last `stats`: on a shared machine it competes with the host's. */
let cpuFrom = process.cpuUsage()
/** The requests since the last `stats`, in arrival order (their end is read from the mock's record). */
let seen: { key: string, tool?: string, request: MockRequest, waitMs?: number }[] = []
/** The people's commands since the last `stats` (at: this process's performance clock, as the requests'). */
let commands: UserCommand[] = []
/** The task of a session key: what precedes its NUL (the workspace, or the bare loop). */
const taskOf = (key: string) => key.slice(0, key.indexOf('\u0000'))
/** What an answer did: the first tool it called, or 'text'. */
const answered = (reply: MockReply | undefined) => reply?.kind === undefined || reply.kind === 'stream' ? (reply as MockStream | undefined)?.toolCalls?.[0]?.name ?? 'text' : reply.kind

function keyOf(request: MockRequest) {
  const header = request.headers['x-scale-session']
  if (typeof header === 'string') return `bare ${header}\u0000main`
  const system = String(request.body?.messages?.[0]?.content ?? '')
  const cwd = /Workspace directory: (.*)$/m.exec(system)?.[1] ?? '?'
  return `${cwd}\u0000${system.includes('You are a reviewer') ? 'reviewer' : 'main'}`
}

mock.fallback = async (request) => {
  served++
  const key = keyOf(request)
  const wait = paced ? paced() : delayMs
  seen.push({ key, tool: carriedTool(request.body?.messages ?? []), request, waitMs: wait })
  captured?.push({ key, body: request.body })
  if (wait) await new Promise((resolve) => setTimeout(resolve, wait))
  return withUsage(request, await player(request))
}

/**
 * What each aborted request was, so that one is not a mystery count: its role, the tool result it
 * carried (the step it continued), how long it was open before the client closed it, and whether that
 * session sent another request after it (it went on: a cancel or a retry) or never did (it stopped there).
 */
function abortedRequests() {
  return seen.flatMap(({ key, tool, request, waitMs }, index) => request.aborted ? [{
    role: key.slice(key.indexOf('\u0000') + 1), carried: tool ?? 'turn start', openMs: Math.round((request.abortedAt ?? performance.now()) - request.receivedAt),
    wentOn: seen.slice(index + 1).some((later) => later.key === key), paceMs: Math.round(waitMs ?? 0),
  }] : [])
}

function stats() {
  const records: StepRecord[] = seen.map(({ key, tool, request }) => ({
    key, task: taskOf(key), tool, receivedAt: request.receivedAt, endedAt: request.endedAt, answered: answered(request.reply),
  }))
  const gaps = stepGaps(records, commands)
  const byTool: Record<string, number[]> = {}
  for (const { gap, tool } of gaps.inTurn) (byTool[tool] ??= []).push(gap)
  /** The host-added gaps by what the answer before them did. */
  const hostAdded: Record<string, number[]> = {}
  for (const { gap, after } of gaps.hostAdded) (hostAdded[after] ??= []).push(gap)
  /** The same gaps by what the answer did and what the request after it was (`write → in turn`). */
  const hostAddedPairs: Record<string, number[]> = {}
  for (const { gap, after, next } of gaps.hostAdded) (hostAddedPairs[`${after} → ${next}`] ??= []).push(gap)
  const used = process.cpuUsage(cpuFrom)
  return {
    served, inTurn: gaps.inTurn.map(({ gap }) => gap), byTool, hostAdded, hostAddedPairs, awaiting: gaps.awaiting, sameSession: gaps.sameSession, cpuMs: (used.user + used.system) / 1000,
    aborted: seen.filter(({ request }) => request.aborted).length,
    abortedWhat: abortedRequests(),
    streaming: seen.filter(({ request }) => request.endedAt === undefined && !request.aborted).length,
  }
}

const say = (line: string) => process.stdout.write(line + '\n')
say(`ready ${mock.baseURL}`)
for await (const line of createInterface({ input: process.stdin })) {
  const [command, argument] = line.trim().split(/\s+/, 2)
  if (command === 'delay') {
    delayMs = Number(argument) || 0
    paced = undefined
    say('ok')
  } else if (command === 'pace') {
    const [seed, medianMs, p99Ms] = line.trim().split(/\s+/).slice(1).map(Number)
    try {
      paced = paceSampler({ seed, medianMs, p99Ms })
      say('ok')
    } catch (error) {
      say(`error ${(error as Error).message}`)
    }
  } else if (command === 'capture') {
    captured = []
    say('ok')
  } else if (command === 'dump') {
    writeFileSync(argument, JSON.stringify(captured ?? []))
    captured = undefined
    say('ok')
  } else if (command === 'user') {
    try {
      const { task, at, what, shown } = JSON.parse(line.trim().slice(4))
      if (typeof task !== 'string' || typeof what !== 'string' || !Number.isFinite(at) || (shown !== undefined && !Number.isFinite(shown))) {
        throw new Error('user takes {"task": string, "at": epoch ms, "what": string, "shown"?: epoch ms}')
      }
      // The harness's epoch milliseconds on this process's clock (each process's performance.timeOrigin
      // is the wall clock at its start: apart by well under a millisecond here, unless the clock was stepped).
      commands.push({ task, at: at - performance.timeOrigin, what, ...shown !== undefined ? { shownAt: shown - performance.timeOrigin } : {} })
      say('ok')
    } catch (error) {
      say(`error ${(error as Error).message}`)
    }
  } else if (command === 'stats') {
    say(`stats ${JSON.stringify(stats())}`)
    cpuFrom = process.cpuUsage()
    served = 0
    seen = []
    commands = []
    // The mock keeps every request it served; a paced run of hundreds of sessions need not.
    mock.requests.length = 0
  } else {
    say(`error unknown command ${command}`)
  }
}
await mock.close()
