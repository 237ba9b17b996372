import type { DshWeb } from './dsh-host'

/** What DSH's `commands/execute` answers for one line. */
export interface CommandAnswer { kind: string, text?: string, [key: string]: unknown }

/** Run a slash command in a DSH session through `POST /api/commands/execute` (DSH's own door for `/cmd`). */
export async function execute(web: DshWeb, sessionId: string, line: string): Promise<CommandAnswer> {
  const answer = await web.api('commands/execute', { args: { agentId: sessionId, line, images: [] } })
  return (answer?.result ?? answer) as CommandAnswer
}

export function commandText(answer: CommandAnswer) {
  return String(answer.text ?? JSON.stringify(answer))
}

/** The JSON block of a Taskward command reply (adapters/dsh/src/commands.ts `replyText`). */
export function replyJson(answer: CommandAnswer): any {
  const match = /```json\n([\s\S]*?)\n```/.exec(commandText(answer))
  if (!match) throw new Error(`no JSON in the reply: ${commandText(answer)}`)
  return JSON.parse(match[1])
}
