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
