/*
 * The child side of tests/host-process.ts: a host process answering one command per stdin line with one
 * line on stdout (tests/lease-host.child.ts, tests/repair-host.child.ts).
 */
import { createInterface } from 'node:readline'
import type { TestHost } from '@taskward/testkit'

/** One line on stdout (newlines become spaces: an answer is always one line). */
export const say = (line: string) => process.stdout.write(line.replace(/\n/g, ' ') + '\n')

/** A command's handler, given the words after the command; it answers with `say`. */
export type Command = (...words: string[]) => Promise<void>

/**
 * For each stdin line `<command> <words…>`, runs `commands[command](...words)` (an unknown command is not
 * answered). `dispose` stops the host, answers and exits; a command that throws answers
 * `err <command> <code> <message>`.
 */
export async function serveCommands(host: TestHost, commands: Record<string, Command>) {
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, ...words] = line.trim().split(' ')
    try {
      if (command === 'dispose') {
        await host.dispose()
        say('ok dispose')
        process.exit(0)
      }
      if (Object.hasOwn(commands, command)) await commands[command](...words)
    } catch (error: any) {
      say(`err ${command} ${error?.code ?? 'UNCODED'} ${error?.message ?? error}`)
    }
  }
}
