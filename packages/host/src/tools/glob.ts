import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { TaskwardError } from '@taskward/protocol'
import { controlCharacterRefusal } from './paths'

/** Longest glob pattern the file tools accept. */
export const MAX_GLOB_LENGTH = 1000
/** How long one listing may take before it is ended. */
export const GLOB_DEADLINE_MS = 10_000

// The worker's whole program, evaluated as a script: tinyglobby is passed in by absolute path.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { glob } = require(workerData.tinyglobby)
glob(workerData.pattern, workerData.options).then(
  (files) => parentPort.postMessage({ files }),
  (error) => parentPort.postMessage({ error: String(error && error.message || error) }),
)
`

let tinyglobbyPath: string | undefined

export interface ListOptions {
  signal?: AbortSignal
  /** The tool argument the pattern came from, for the refusal's details (default `pattern`). */
  argument?: string
  deadlineMs?: number
}

/**
 * The files of `cwd` matching a glob `pattern` from a model, sorted; symlinks are not followed and `.git`
 * is skipped. A glob is compiled to a backtracking JavaScript regular expression (`*a*a*a*a*!` against a
 * long file name the model can create takes minutes), so the listing runs in a worker thread that the
 * deadline and the caller's `signal` end at once: `PATTERN_REJECTED` (reason `deadline`) or `ABORTED`.
 * An escaping, overlong or unparsable pattern, or one holding a control character, is refused up front.
 */
export function listFiles(cwd: string, pattern: string, options: ListOptions = {}): Promise<string[]> {
  const control = controlCharacterRefusal(pattern, 'The glob pattern', options.argument ?? 'pattern')
  if (control) return Promise.reject(control)
  if (pattern.startsWith('/') || pattern.split('/').includes('..')) {
    return Promise.reject(new TaskwardError('PATH_OUTSIDE_WORKSPACE', `Pattern "${pattern.slice(0, 100)}" must stay inside the working directory.`))
  }
  if (pattern.length > MAX_GLOB_LENGTH) {
    return Promise.reject(new TaskwardError('PATTERN_REJECTED', `The glob pattern is ${pattern.length} characters; use at most ${MAX_GLOB_LENGTH}.`, { reason: 'too-long' }))
  }
  if (options.signal?.aborted) return Promise.reject(new TaskwardError('ABORTED', 'The search was cancelled.'))
  tinyglobbyPath ??= createRequire(import.meta.url).resolve('tinyglobby')
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true, execArgv: [],
      workerData: { tinyglobby: tinyglobbyPath, pattern, options: { cwd, dot: true, followSymbolicLinks: false, onlyFiles: true, ignore: ['.git/**'] } },
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    })
    const deadline = options.deadlineMs ?? GLOB_DEADLINE_MS
    let settled = false
    const finish = (error: TaskwardError | undefined, files?: string[]) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      void worker.terminate()
      if (error) reject(error)
      else resolve(files!.sort())
    }
    const onAbort = () => finish(new TaskwardError('ABORTED', 'The search was cancelled.'))
    const timer = setTimeout(() => finish(new TaskwardError('PATTERN_REJECTED',
      `Listing the files for "${pattern.slice(0, 100)}" did not finish within ${deadline / 1000} s. Use a simpler pattern (fewer \`*\`) or a narrower directory.`,
      { reason: 'deadline' })), deadline)
    options.signal?.addEventListener('abort', onAbort)
    worker.on('message', (message: { files?: string[], error?: string }) => {
      if (message.error !== undefined) {
        finish(new TaskwardError('PATTERN_REJECTED', `The glob pattern cannot be used (${message.error.slice(0, 200)}).`, { reason: 'syntax' }))
      } else finish(undefined, message.files)
    })
    worker.on('error', (error) => finish(new TaskwardError('TOOL_FAILED', `Listing the files failed: ${error.message}`)))
    worker.on('exit', () => finish(new TaskwardError('TOOL_FAILED', 'Listing the files ended without an answer.')))
  })
}
