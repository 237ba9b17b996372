import type { Finding } from './doctor'

/**
 * libuv's threadpool size `npm start` gives the host (scripts/start.mjs sets UV_THREADPOOL_SIZE to it
 * unless the operator set one; a test holds the two together). Every file-system call of the host
 * waits for one of these threads: the file tools' dozen calls per write, the workspace's stats and
 * reads, the store's fsync. With libuv's default of 4, at 500 sessions a few slow fsyncs and workspace
 * readings held all four, and a `write` tool call took ~1 s (median) instead of ~30 ms with 16
 * (docs/operations.md, "Sizing a host"). The threads mostly wait on the disk: 16 cost little memory.
 */
export const HOST_THREADPOOL_SIZE = 16

/** Fewer threads than this is worth a warning on a host that serves many sessions. */
const ENOUGH = 8

/**
 * The pool libuv starts for a value of UV_THREADPOOL_SIZE, as libuv reads it: unset, 4; else C's
 * `atoi` (leading digits, so `7.5` is 7 and `1e1` is 1; none, 0), then 0 becomes 1, and the count is
 * unsigned, capped at 1024 — so a negative number is 1024.
 */
export function libuvThreadpoolSize(value: string | undefined): number {
  if (value === undefined) return 4
  const parsed = Number.parseInt(value, 10)
  const size = Number.isNaN(parsed) ? 0 : parsed
  if (size === 0) return 1
  if (size < 0 || size > 1024) return 1024
  return size
}

/**
 * The doctor's view of the threadpool: the size libuv starts for this process's UV_THREADPOOL_SIZE.
 * libuv reads the variable once, when its pool starts (at the first file-system call), so this is
 * right for the environment the process was started with; a process that changes the variable later
 * makes it wrong (Taskward never does).
 */
export function threadpoolFinding(value: string | undefined = process.env.UV_THREADPOOL_SIZE): Finding {
  const check = 'file-system threads'
  const size = libuvThreadpoolSize(value)
  const advice = `start the host process with UV_THREADPOOL_SIZE=${HOST_THREADPOOL_SIZE} in its environment (npm start and npm run dsh do)`
  const slow = 'with many sessions, file tool calls wait behind slow fsyncs and workspace readings'
  if (value === undefined) return { check, verdict: 'warn', detail: `libuv's default of 4: ${slow}; ${advice}` }
  const read = String(size) === value.trim() ? '' : ` (libuv reads UV_THREADPOOL_SIZE=${JSON.stringify(value)} as ${size})`
  if (size < ENOUGH) return { check, verdict: 'warn', detail: `${size}${read}: ${slow}; ${advice}` }
  return { check, verdict: 'ok', detail: `${size} (UV_THREADPOOL_SIZE)${read}` }
}
