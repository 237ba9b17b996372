/**
 * The scale benchmark's model endpoint, in a process of its own so that the host's process measures
 * only the host: the loopback OpenAI mock playing a competent agent through a one-node supervised task
 * (testkit's `taskPlayer`), optionally waiting `delay` ms before each answer.
 *
 * It prints `ready <baseURL>`, then answers one line per command read from stdin:
 *   delay <ms>     wait that long before each answer                → `ok`
 *   capture on     keep every request body, with its session's key   → `ok`
 *   dump <file>    write the kept bodies (JSON) to <file>, stop keeping → `ok`
 *   stats          `stats {served, inTurn: [...], sameSession: [...]}` and start counting afresh
 * A request's session is told by its workspace directory and role (from the system message); a gap is
 * the time from the end of a session's answer to that session's next request arriving, "in turn" when
 * that request carries tool results (the next step of the same turn).
 */
import { createInterface } from 'node:readline'
import { writeFileSync } from 'node:fs'
import { OpenAIMock, taskPlayer, type MockRequest } from '@taskward/testkit'

const player = taskPlayer({ plan: { acceptanceCriteria: ['a.txt says done'], nodes: [{ id: 'a', title: 'write a' }] } })
const mock = await OpenAIMock.start()
let delayMs = 0
let captured: { key: string, body: unknown }[] | undefined
let served = 0
let inTurn: number[] = []
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
    if (request.body?.messages?.at(-1)?.role === 'tool') inTurn.push(gap)
  }
  lastAnswer.set(key, request)
  captured?.push({ key, body: request.body })
  if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs))
  return player(request)
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
    say(`stats ${JSON.stringify({ served, inTurn, sameSession })}`)
    served = 0
    inTurn = []
    sameSession = []
    lastAnswer.clear()
  } else {
    say(`error unknown command ${command}`)
  }
}
await mock.close()
