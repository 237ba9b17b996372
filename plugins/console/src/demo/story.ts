import type { TaskPlan } from '@taskward/protocol'

/*
 * The demo's fixed story: a tiny greeting library planned as a diamond (core → en, de → cli, so `cli`
 * is a shared descendant), built by the scripted agent with real `write` calls, accepted by scripted
 * reviewers — and then the user spots that the English greeting lacks its "!", the agent reads the
 * file and proposes a repair rooted at `en`. Everything here is constant, so every demo is the same.
 */

export const DEMO_OBJECTIVE = 'Build a tiny greeting library with English and German greetings and a command-line entry'

export const DEMO_PLAN: TaskPlan = {
  acceptanceCriteria: [
    'greet("en", name) returns "Hello, <name>!"',
    'greet("de", name) returns "Hallo, <name>!"',
    'node src/cli.js <lang> <name> prints the greeting',
  ],
  nodes: [
    { id: 'core', title: 'Greeting core (src/greet.js)', dependsOn: [] },
    { id: 'en', title: 'English phrases (src/en.js)', dependsOn: ['core'] },
    { id: 'de', title: 'German phrases (src/de.js)', dependsOn: ['core'] },
    { id: 'cli', title: 'Command-line entry (src/cli.js)', dependsOn: ['en', 'de'] },
  ],
}

/** What each node writes. `en` carries the defect the repair is about (no "!"). */
export const DEMO_FILES: Record<string, { path: string, content: string }> = {
  core: {
    path: 'src/greet.js',
    content: "import { en } from './en.js'\nimport { de } from './de.js'\n\nconst phrases = { en, de }\n\n"
      + "export function greet(lang, name) {\n  const phrase = phrases[lang]\n  if (!phrase) throw new Error(`No greeting for ${lang}`)\n"
      + '  return phrase(name)\n}\n',
  },
  en: { path: 'src/en.js', content: 'export const en = (name) => `Hello, ${name}`\n' },
  de: { path: 'src/de.js', content: 'export const de = (name) => `Hallo, ${name}!`\n' },
  cli: {
    path: 'src/cli.js',
    content: "import { greet } from './greet.js'\n\nconst [lang = 'en', name = 'World'] = process.argv.slice(2)\nconsole.log(greet(lang, name))\n",
  },
}

export const DEMO_README = '# Greetings (Taskward demo)\n\nA workspace created by the Taskward console demo. It is safe to delete.\n'

/** Marks a directory the demo created, so a later demo may replace it and nothing else is touched. */
export const DEMO_MARKER = '.taskward-demo'

export const DEMO_USER_REPORT = 'The English greeting prints "Hello, World" without the exclamation mark the acceptance criteria ask for. '
  + 'Please check src/en.js.'

export const DEMO_REPAIR = {
  title: 'English greeting lacks the exclamation mark',
  reason: 'src/en.js returns "Hello, <name>" but the acceptance criterion is "Hello, <name>!". The English phrases node must be '
    + 'fixed; the command-line entry depends on it and needs a new review.',
  rootNodeIds: ['en'],
}

/** Reviewer findings per review kind (all passes: the defect slipped through review). */
export const DEMO_FINDINGS: Record<string, string> = {
  plan: 'The plan covers both languages and the command line; cli depends on both phrase modules.',
  stage: 'The file named by the node was written as described.',
  completion: 'Every node passed its review; the greeting library is complete.',
  progress: 'Progress is visible.',
}

/**
 * The demo task's validation check, for hosts that load the recovery controller (which never lets a
 * task without checks complete): every file the story writes must exist and hold an export.
 * It runs against a copy of the workspace, as an argv (no shell).
 */
export function demoChecks(node: string) {
  const files = Object.values(DEMO_FILES).map((file) => file.path)
  const script = `const fs = require('fs'); for (const f of ${JSON.stringify(files)}) `
    + `if (!/\\b(export|import)\\b/.test(fs.readFileSync(f, 'utf8'))) throw new Error(f + ' holds no module code')`
  return [{ id: 'files-written', argv: [node, '-e', script], timeoutMs: 30_000 }]
}
