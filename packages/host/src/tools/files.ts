import type { Context } from 'cordis'
import Schema from 'schemastery'
import { close, closeSync, ftruncate, ftruncateSync, readSync, write, writeSync } from 'node:fs'
import { promisify } from 'node:util'
import { relative, resolve } from 'node:path'
import { cutIndex, TaskwardError } from '@taskward/protocol'
import { listFiles } from './glob'
import { LineMatcher } from './grep'
import { openInside } from './open'

const MAX_READ_BYTES = 1 << 20
const MAX_MATCHES = 200

/**
 * The whole text behind `fd`, refused past `MAX_READ_BYTES` (also when the file grew since its fstat).
 * Read synchronously, as `openInside` opens: at most 1 MiB of a regular file.
 */
function readBounded(fd: number, size: number, path: string): string {
  const tooLarge = (bytes: number) => new TaskwardError('BAD_REQUEST', `"${path}" is ${bytes} bytes; the file tools read at most ${MAX_READ_BYTES}.`)
  if (size > MAX_READ_BYTES) throw tooLarge(size)
  const buffer = Buffer.allocUnsafe(MAX_READ_BYTES + 1)
  let length = 0
  for (;;) {
    const bytesRead = readSync(fd, buffer, length, buffer.length - length, length)
    if (!bytesRead) break
    length += bytesRead
    if (length > MAX_READ_BYTES) throw tooLarge(length)
  }
  return buffer.toString('utf8', 0, length)
}

/** The text of a file of the cwd (`openInside` decides what may be read), at most `MAX_READ_BYTES`. */
async function readText(cwd: string, path: string): Promise<string> {
  const { fd, stats } = await openInside(cwd, path, 'read')
  try {
    return readBounded(fd, stats.size, path)
  } finally {
    closeSync(fd)
  }
}

/** Content up to this size is written synchronously; more, through libuv's pool (see `overwriteAndClose`). */
const SYNC_WRITE_BYTES = 1 << 20
const ftruncateAsync = promisify(ftruncate)
const writeAsync = promisify(write)
const closeAsync = promisify(close)

/**
 * Replace the whole content of an opened file through its descriptor (every byte: a write may take part
 * of them), then close it. Synchronous up to 1 MiB, as `openInside` is (its comment says why): a larger
 * write (the tool's content is not bounded) would hold the host's thread while the kernel throttles it,
 * so it goes through the pool.
 */
async function overwriteAndClose(fd: number, content: string) {
  const bytes = Buffer.from(content, 'utf8')
  if (bytes.length <= SYNC_WRITE_BYTES) {
    try {
      ftruncateSync(fd, 0)
      for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written, bytes.length - written, written)
    } finally {
      closeSync(fd)
    }
    return
  }
  try {
    await ftruncateAsync(fd, 0)
    for (let written = 0; written < bytes.length;) written += (await writeAsync(fd, bytes, written, bytes.length - written, written)).bytesWritten
  } finally {
    await closeAsync(fd)
  }
}

/**
 * The host's file tools, scoped to the session's cwd: `read`, `glob`, `grep` (read-only), `write`,
 * `edit`. Every file is opened through `openInside` (no symlink out of the cwd, no special files, no
 * hard-linked files, nothing inside `.git` for writes) and read or written through that descriptor.
 */
export function registerFileTools(ctx: Context) {
  ctx.tools.register({
    name: 'read',
    description: 'Read a text file inside the working directory; `offset` and `limit` (characters) read a part of it.',
    readOnly: true,
    parameters: Schema.object({
      path: Schema.string().required(),
      offset: Schema.natural().description('the first character to read (0: the start)'),
      limit: Schema.natural().min(1).description('how many characters to read at most'),
    }),
    async execute({ path, offset, limit }, { session }) {
      const content = await readText(session.cwd, path)
      if (offset === undefined && limit === undefined) return { path, content }
      // A part: where it starts and how long the whole text is, so that the next part can be asked for.
      // Whole characters only: a part never starts or ends inside a surrogate pair.
      const from = cutIndex(content, Math.min(offset ?? 0, content.length))
      let to = limit === undefined ? content.length : cutIndex(content, Math.min(content.length, from + limit))
      // A limit of one character that falls on a pair: the pair, whole.
      if (to <= from && from < content.length) to = Math.min(content.length, from + 2)
      return { path, offset: from, content: content.slice(from, to), chars: content.length }
    },
  })

  ctx.tools.register({
    name: 'glob',
    description: 'List files matching a glob pattern inside the working directory.',
    readOnly: true,
    parameters: Schema.object({ pattern: Schema.string().default('**/*') }),
    async execute({ pattern }, { session, signal }) {
      return { files: await listFiles(session.cwd, pattern, { signal }) }
    },
  })

  ctx.tools.register({
    name: 'grep',
    description: 'Search files (a glob, default all) for a regular expression (RE2 syntax: no backreferences or lookaround); returns matching lines.',
    readOnly: true,
    parameters: Schema.object({ pattern: Schema.string().required(), include: Schema.string().default('**/*') }),
    async execute({ pattern, include }, { session, signal }) {
      const files = await listFiles(session.cwd, include, { signal, argument: 'include' })
      const matcher = new LineMatcher(pattern, { signal })
      const matches: { path: string, line: number, text: string }[] = []
      // Files `read` would refuse (special, hard-linked, too large, gone) are skipped and named.
      const skipped: string[] = []
      try {
        for (const file of files) {
          let text: string
          try {
            text = await readText(session.cwd, file)
          } catch (error) {
            if (!TaskwardError.is(error)) throw error
            skipped.push(file)
            continue
          }
          for (const [line, lineText] of await matcher.match(text, MAX_MATCHES - matches.length)) {
            matches.push({ path: file, line, text: lineText })
          }
          if (matches.length >= MAX_MATCHES) break
        }
      } finally {
        matcher.close()
      }
      return { matches, truncated: matches.length >= MAX_MATCHES, ...skipped.length ? { skipped } : {} }
    },
  })

  ctx.tools.register({
    name: 'write',
    description: 'Create or overwrite a text file inside the working directory.',
    parameters: Schema.object({ path: Schema.string().required(), content: Schema.string().required() }),
    async execute({ path, content }, { session }) {
      const { fd } = await openInside(session.cwd, path, 'write')
      await overwriteAndClose(fd, content)
      return { path: relative(session.cwd, resolve(session.cwd, path)), bytes: Buffer.byteLength(content) }
    },
  })

  ctx.tools.register({
    name: 'edit',
    description: 'Replace exactly one occurrence of `old` with `new` in a file inside the working directory.',
    parameters: Schema.object({ path: Schema.string().required(), old: Schema.string().required(), new: Schema.string().required() }) as Schema<any, { path: string, old: string, new: string }>,
    async execute(args, { session }) {
      const { fd, stats } = await openInside(session.cwd, args.path, 'edit')
      let edited: string
      try {
        const text = readBounded(fd, stats.size, args.path)
        const first = text.indexOf(args.old)
        if (first < 0) throw new TaskwardError('BAD_REQUEST', `"${args.path}" does not contain the text to replace.`)
        if (text.indexOf(args.old, first + 1) >= 0) {
          throw new TaskwardError('BAD_REQUEST', `"${args.path}" contains the text to replace more than once; include more context.`)
        }
        edited = text.slice(0, first) + args.new + text.slice(first + args.old.length)
      } catch (error) {
        closeSync(fd)
        throw error
      }
      await overwriteAndClose(fd, edited)
      return { path: args.path }
    },
  })
}
