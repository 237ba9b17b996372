import type { Finding } from './doctor'

/**
 * The Node releases Taskward supports: the root package.json's `engines` says the same (a test holds
 * them together). The minimum minors are the first of each line where require() of an ES module works
 * without a flag, as on 24, so a CommonJS consumer of the packages sees the same loading on every line.
 */
export const NODE_ENGINES = '^20.19.0 || ^22.12.0 || >=24.0.0'

/** The oldest minor of each supported even line below 24 (24 and later: any). */
const MINIMUM_MINOR: Record<number, number> = { 20: 19, 22: 12 }

/**
 * The doctor's verdict on a Node version (`process.versions.node` by default). Node 20 is end of life
 * since April 2026: still run by CI and accepted, but a WARN, so that an operator moves before it is
 * dropped. An odd-numbered line is never an LTS one: a WARN too. Below 20: a FAIL.
 */
export function nodeFinding(version: string = process.versions.node): Finding {
  const [major, minor] = version.split('.').map(Number)
  const v = `Node v${version}`
  if (!(major >= 20)) return { check: 'node', verdict: 'fail', detail: `${v}: Taskward needs Node 24 (or 22; ${NODE_ENGINES})` }
  if (major % 2 === 1) return { check: 'node', verdict: 'warn', detail: `${v}: an odd-numbered release, never a long-term-support one; run Node 24 (or 22)` }
  if (major in MINIMUM_MINOR && minor < MINIMUM_MINOR[major]) {
    return { check: 'node', verdict: 'warn', detail: `${v}: older than ${major}.${MINIMUM_MINOR[major]}, the oldest ${major} release supported (${NODE_ENGINES}); update Node` }
  }
  if (major === 20) return { check: 'node', verdict: 'warn', detail: `${v}: end of life since April 2026 (no more security fixes); Taskward still runs on it, deprecated: move to Node 24 (or 22)` }
  return { check: 'node', verdict: 'ok', detail: v }
}
