import type { Context } from 'cordis'
import Schema from 'schemastery'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { dirname, relative } from 'node:path'
import { glob } from 'tinyglobby'
import { TaskwardError } from '@taskward/protocol'
import { LineMatcher } from './grep'
import { resolveInside } from './paths'

const MAX_READ_BYTES = 1 << 20
const MAX_MATCHES = 200

async function listFiles(cwd: string, pattern: string) {
  if (pattern.startsWith('/') || pattern.split('/').includes('..')) {
    throw new TaskwardError('PATH_OUTSIDE_WORKSPACE', `Pattern "${pattern}" must stay inside the working directory.`)
  }
  // Symlinks are not followed, so a glob never walks out of the cwd.
  const files = await glob(pattern, { cwd, dot: true, followSymbolicLinks: false, onlyFiles: true, ignore: ['.git/**'] })
  return files.sort()
}

/** The host's file tools, scoped to the session's cwd: `read`, `glob`, `grep` (read-only), `write`, `edit`. */
export function registerFileTools(ctx: Context) {
  ctx.tools.register({
    name: 'read',
    description: 'Read a text file inside the working directory.',
    readOnly: true,
    parameters: Schema.object({ path: Schema.string().required() }),
    async execute({ path }, { session }) {
      const target = await resolveInside(session.cwd, path)
      const info = await stat(target).catch(() => {
        throw new TaskwardError('NOT_FOUND', `No file "${path}" in the working directory.`)
      })
      if (!info.isFile()) throw new TaskwardError('BAD_REQUEST', `"${path}" is not a regular file.`)
      if (info.size > MAX_READ_BYTES) throw new TaskwardError('BAD_REQUEST', `"${path}" is ${info.size} bytes; read at most ${MAX_READ_BYTES}.`)
      return { path, content: await readFile(target, 'utf8') }
    },
  })

  ctx.tools.register({
    name: 'glob',
    description: 'List files matching a glob pattern inside the working directory.',
    readOnly: true,
    parameters: Schema.object({ pattern: Schema.string().default('**/*') }),
    async execute({ pattern }, { session }) {
      return { files: await listFiles(session.cwd, pattern) }
    },
  })

  ctx.tools.register({
    name: 'grep',
    description: 'Search files (a glob, default all) for a regular expression (RE2 syntax: no backreferences or lookaround); returns matching lines.',
    readOnly: true,
    parameters: Schema.object({ pattern: Schema.string().required(), include: Schema.string().default('**/*') }),
    async execute({ pattern, include }, { session, signal }) {
      const files = await listFiles(session.cwd, include)
      const matcher = new LineMatcher(pattern, { signal })
      const matches: { path: string, line: number, text: string }[] = []
      try {
        for (const file of files) {
          const target = await resolveInside(session.cwd, file)
          const info = await stat(target)
          if (info.size > MAX_READ_BYTES) continue
          for (const [line, text] of await matcher.match(await readFile(target, 'utf8'), MAX_MATCHES - matches.length)) {
            matches.push({ path: file, line, text })
          }
          if (matches.length >= MAX_MATCHES) break
        }
      } finally {
        matcher.close()
      }
      return { matches, truncated: matches.length >= MAX_MATCHES }
    },
  })

  ctx.tools.register({
    name: 'write',
    description: 'Create or overwrite a text file inside the working directory.',
    parameters: Schema.object({ path: Schema.string().required(), content: Schema.string().required() }),
    async execute({ path, content }, { session }) {
      const target = await resolveInside(session.cwd, path, { write: true })
      await mkdir(dirname(target), { recursive: true })
      await writeFile(target, content)
      return { path: relative(session.cwd, target), bytes: Buffer.byteLength(content) }
    },
  })

  ctx.tools.register({
    name: 'edit',
    description: 'Replace exactly one occurrence of `old` with `new` in a file inside the working directory.',
    parameters: Schema.object({ path: Schema.string().required(), old: Schema.string().required(), new: Schema.string().required() }) as Schema<any, { path: string, old: string, new: string }>,
    async execute(args, { session }) {
      const target = await resolveInside(session.cwd, args.path, { write: true })
      const text = await readFile(target, 'utf8').catch(() => {
        throw new TaskwardError('NOT_FOUND', `No file "${args.path}" in the working directory.`)
      })
      const first = text.indexOf(args.old)
      if (first < 0) throw new TaskwardError('BAD_REQUEST', `"${args.path}" does not contain the text to replace.`)
      if (text.indexOf(args.old, first + 1) >= 0) {
        throw new TaskwardError('BAD_REQUEST', `"${args.path}" contains the text to replace more than once; include more context.`)
      }
      await writeFile(target, text.slice(0, first) + args.new + text.slice(first + args.old.length))
      return { path: args.path }
    },
  })
}
