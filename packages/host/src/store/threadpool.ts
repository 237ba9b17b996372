import type { Finding } from './doctor'

/**
 * libuv's threadpool size `npm start` gives the host (scripts/start.mjs sets UV_THREADPOOL_SIZE to it
 * unless the operator set one; a test holds the two together). Every file-system call of the host
 * waits for one of these threads: the file tools' dozen calls per write, the workspace's stats and
 * reads, the store's fsync. With libuv's default of 4, at 500 sessions a few slow fsyncs and workspace
 * readings held all four, and a `write` tool call took ~1 s (median) instead of ~30 ms with 16
 * (docs/operations.md, "Scale"). The threads mostly wait on the disk: 16 cost little memory.
 */
export const HOST_THREADPOOL_SIZE = 16

/** Fewer threads than this is worth a warning on a host that serves many sessions. */
const ENOUGH = 8

/**
 * The doctor's view of the threadpool this process was started with. libuv reads UV_THREADPOOL_SIZE
 * once, when its pool starts (at the first file-system call): the environment the process was started
 * with is the size it has (an assignment from JavaScript later is not, so it is not looked for).
 */
export function threadpoolFinding(value: string | undefined = process.env.UV_THREADPOOL_SIZE): Finding {
  const size = value === undefined || value.trim() === '' ? undefined : Number(value)
  const check = 'file-system threads'
  const advice = `start the host with UV_THREADPOOL_SIZE=${HOST_THREADPOOL_SIZE} (npm start does; under DSH, set it in the environment DSH starts with)`
  if (size === undefined) return { check, verdict: 'warn', detail: `libuv's default of 4: with many sessions, file tool calls wait behind slow fsyncs and workspace readings; ${advice}` }
  if (!Number.isInteger(size) || size < 1) return { check, verdict: 'warn', detail: `UV_THREADPOOL_SIZE=${JSON.stringify(value)} is not a positive whole number (libuv then uses 4); ${advice}` }
  // libuv caps the pool at 1024 threads.
  const effective = Math.min(size, 1024)
  if (effective < ENOUGH) return { check, verdict: 'warn', detail: `${effective} (UV_THREADPOOL_SIZE): with many sessions, file tool calls wait behind slow fsyncs and workspace readings; ${advice}` }
  return { check, verdict: 'ok', detail: `${effective} (UV_THREADPOOL_SIZE)` }
}
