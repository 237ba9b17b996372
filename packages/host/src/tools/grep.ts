import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { RE2JS } from 're2js'
import { TaskwardError } from '@taskward/protocol'

/** Longest pattern `grep` accepts. */
export const MAX_PATTERN_LENGTH = 1000
/** How long one `grep` call may match before it is ended. */
export const GREP_DEADLINE_MS = 10_000
/** Longest text returned per matching line. */
const MAX_LINE_TEXT = 400

/**
 * Parse a model's pattern as RE2 syntax (linear-time matching: no backreferences or lookaround).
 * Refused with `PATTERN_REJECTED` when it is too long or does not parse.
 */
export function checkPattern(pattern: string) {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new TaskwardError('PATTERN_REJECTED', `The pattern is ${pattern.length} characters; use at most ${MAX_PATTERN_LENGTH}.`, { reason: 'too-long' })
  }
  try {
    RE2JS.compile(pattern)
  } catch (error) {
    throw new TaskwardError('PATTERN_REJECTED',
      `The pattern is not a regular expression grep can run (${(error as Error).message}). grep uses RE2 syntax: no backreferences or lookaround; escape literal characters with \\.`,
      { reason: 'syntax' })
  }
}

// The worker's whole program. It is evaluated as a script (no module resolution), so re2js is passed
// in by absolute path.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { RE2JS } = require(workerData.re2js)
const regexp = RE2JS.compile(workerData.pattern)
parentPort.on('message', ({ text, limit }) => {
  const lines = text.split('\\n')
  const found = []
  for (let i = 0; i < lines.length && found.length < limit; i++) {
    if (regexp.test(lines[i])) found.push([i + 1, lines[i].slice(0, ${MAX_LINE_TEXT})])
  }
  parentPort.postMessage(found)
})
`

let re2Path: string | undefined

export interface MatcherOptions {
  signal?: AbortSignal
  deadlineMs?: number
}

/**
 * Matches lines against one pattern in a worker thread with re2js: linear in the text, and off the
 * event loop. The deadline (from creation) and the caller's `signal` end the worker at once: a late
 * match is refused with `PATTERN_REJECTED` (reason `deadline`), a cancelled one with `ABORTED`.
 */
export class LineMatcher {
  private worker: Worker
  private pending?: { resolve: (found: [number, string][]) => void, reject: (error: unknown) => void }
  private failure?: TaskwardError
  private timer: NodeJS.Timeout
  private onAbort = () => this.fail(new TaskwardError('ABORTED', 'The search was cancelled.'))

  constructor(pattern: string, private options: MatcherOptions = {}) {
    checkPattern(pattern)
    // `__filename` in the CommonJS build (where import.meta is empty), import.meta.url in ESM and the sources.
    re2Path ??= createRequire(typeof __filename === 'string' ? __filename : import.meta.url).resolve('re2js')
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true, execArgv: [], workerData: { pattern, re2js: re2Path },
      // One file (≤1 MiB) and its lines at a time: a bounded heap ends a runaway search as an error.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    })
    this.worker.on('message', (found: [number, string][]) => {
      const pending = this.pending
      this.pending = undefined
      pending?.resolve(found)
    })
    this.worker.on('error', (error) => this.fail(new TaskwardError('TOOL_FAILED', `The search failed: ${error.message}`)))
    const deadline = options.deadlineMs ?? GREP_DEADLINE_MS
    this.timer = setTimeout(() => this.fail(new TaskwardError('PATTERN_REJECTED',
      `The search did not finish within ${deadline / 1000} s. Narrow \`include\` to fewer files or simplify the pattern.`,
      { reason: 'deadline' })), deadline)
    if (options.signal?.aborted) this.onAbort()
    options.signal?.addEventListener('abort', this.onAbort)
  }

  private fail(error: TaskwardError) {
    if (this.failure) return
    this.failure = error
    this.close()
    const pending = this.pending
    this.pending = undefined
    pending?.reject(error)
  }

  /** The 1-based numbers and (shortened) texts of the lines of `text` that match, at most `limit`. */
  match(text: string, limit: number): Promise<[number, string][]> {
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject }
      this.worker.postMessage({ text, limit })
    })
  }

  close() {
    clearTimeout(this.timer)
    this.options.signal?.removeEventListener('abort', this.onAbort)
    void this.worker.terminate()
  }
}
