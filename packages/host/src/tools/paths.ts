import { TaskwardError } from '@taskward/protocol'

/**
 * Whether a path component names a git directory: `.git` in any case, also with what a case-folding or
 * normalising file system drops (trailing dots and spaces, zero-width characters) and the 8.3 short name.
 */
export function isGitName(component: string): boolean {
  const folded = component.normalize('NFC').replace(/[\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]/g, '').replace(/[. ]+$/, '').toLowerCase()
  return folded === '.git' || folded === 'git~1'
}

/**
 * Git runs what its config and hooks name: a file written into `.git` (config, hooks, info/attributes)
 * would be executed by the next `git` run in the workspace, outside any sandbox.
 */
export function gitRefusal(path: string) {
  return new TaskwardError('PATH_FORBIDDEN',
    `Path "${path}" is inside a .git directory, which the file tools never write: git would run commands planted there. Change the files of the working tree instead; the user runs git commands.`, { path })
}

/** Names of the control characters a model is most likely to slip into a path. */
const CONTROL_NAMES: Record<number, string> = { 0x00: 'a NUL', 0x09: 'a tab', 0x0a: 'a line feed', 0x0d: 'a carriage return', 0x1b: 'an escape', 0x7f: 'a DEL' }

/**
 * `TOOL_INVALID_ARGS` for a path or glob pattern holding a control character (Unicode's Cc: C0
 * U+0000–U+001F, DEL U+007F and C1 U+0080–U+009F), naming the first one and its position (1-based, in
 * characters), or undefined when there is none. No file name the tools should touch holds one: a NUL
 * would cut the path short at the system call, a line break (also C1's NEL) splits a listing of names,
 * an escape (also C1's CSI) drives the terminal that shows it. `what` starts the message: "Path", "Pattern".
 */
export function controlCharacterRefusal(value: string, what: string, key: string) {
  let position = 0
  for (const char of value) {
    position++
    const point = char.codePointAt(0)!
    if (point > 0x1f && (point < 0x7f || point > 0x9f)) continue
    const unicode = `U+${point.toString(16).toUpperCase().padStart(4, '0')}`
    const name = CONTROL_NAMES[point] ? `${CONTROL_NAMES[point]} (${unicode})` : `the control character ${unicode}`
    return new TaskwardError('TOOL_INVALID_ARGS', `${what} has ${name} at position ${position}; remove it.`, { argument: key, character: unicode, position })
  }
}
