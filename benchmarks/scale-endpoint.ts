/**
 * The scale benchmark's model endpoint, in a process of its own so that the host's process measures
 * only the host: the loopback OpenAI mock playing a competent agent through a one-node supervised task
 * (testkit's `taskPlayer`), optionally waiting `delay` ms before each answer.
 *
 * It prints `ready <baseURL>`, then answers one line per command read from stdin:
 *   delay <ms>     wait that long before each answer                → `ok`
 *   capture on     keep every request body, with its session's key   → `ok`
 *   dump <file>    write the kept bodies (JSON) to <file>, stop keeping → `ok`
 *   stats          `stats {served, inTurn: [...], byTool: {name: [...]}, sameSession: [...], cpuMs}` and start counting afresh
 * A request's session is told by its workspace directory and role (from the system message); a gap is
 * the time from the end of a session's answer to that session's next request arriving, "in turn" when
 * that request carries tool results (the next step of the same turn).
 */
import { createInterface } from 'node:readline'
import { writeFileSync } from 'node:fs'
import { OpenAIMock, renderPrompt, taskPlayer, type MockReply, type MockRequest, type MockStream } from '@taskward/testkit'

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
let captured: { key: string, body: unknown }[] | undefined
let served = 0
/** The endpoint's own CPU since the last `stats`: on a shared machine it competes with the host's. */
let cpuFrom = process.cpuUsage()
let inTurn: number[] = []
/** In-turn gaps by the tool whose result the request carries (what the host did in the gap). */
let byTool: Record<string, number[]> = {}
let sameSession: number[] = []
const lastAnswer = new Map<string, MockRequest>()

function keyOf(request: MockRequest) {
  const system = String(request.body?.messages?.[0]?.content ?? '')
  const cwd = /Workspace directory: (.*)$/m.exec(system)?.[1] ?? '?'
  return `${cwd}\u0000${system.includes('You are a reviewer') ? 'reviewer' : 'main'}`
}

mock.fallback = async (request) => {
  served++
  const key = keyOf(request)
  const previous = lastAnswer.get(key)
  if (previous?.endedAt !== undefined) {
    const gap = request.receivedAt - previous.endedAt
    sameSession.push(gap)
    const messages = request.body?.messages ?? []
    if (messages.at(-1)?.role === 'tool') {
      inTurn.push(gap)
      const callId = messages.at(-1).tool_call_id
      const call = messages.findLast((m: any) => m.role === 'assistant' && m.tool_calls?.length)?.tool_calls?.find((c: any) => c.id === callId)
      ;(byTool[call?.function?.name ?? '?'] ??= []).push(gap)
    }
  }
  lastAnswer.set(key, request)
  captured?.push({ key, body: request.body })
  if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs))
  return withUsage(request, await player(request))
}

const say = (line: string) => process.stdout.write(line + '\n')
say(`ready ${mock.baseURL}`)
for await (const line of createInterface({ input: process.stdin })) {
  const [command, argument] = line.trim().split(/\s+/, 2)
  if (command === 'delay') {
    delayMs = Number(argument) || 0
    say('ok')
  } else if (command === 'capture') {
    captured = []
    say('ok')
  } else if (command === 'dump') {
    writeFileSync(argument, JSON.stringify(captured ?? []))
    captured = undefined
    say('ok')
  } else if (command === 'stats') {
    const used = process.cpuUsage(cpuFrom)
    say(`stats ${JSON.stringify({ served, inTurn, byTool, sameSession, cpuMs: (used.user + used.system) / 1000 })}`)
    cpuFrom = process.cpuUsage()
    served = 0
    inTurn = []
    byTool = {}
    sameSession = []
    lastAnswer.clear()
  } else {
    say(`error unknown command ${command}`)
  }
}
await mock.close()
