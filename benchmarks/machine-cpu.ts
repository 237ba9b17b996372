import { readFileSync } from 'node:fs'

/**
 * CPU time every process of the machine has used (ms) by the first line of /proc/stat (`statText`):
 * what a benchmark's helpers (an endpoint, the launcher, checks, the kernel's own work for
 * namespaces) cost the cores beside the measured process.
 */
export function busyMsOfStat(statText: string): number {
  const [, ...fields] = statText.split('\n')[0].trim().split(/\s+/).map(Number)
  // user nice system idle iowait irq softirq: all but idle and iowait are busy. Not steal (the 8th):
  // time the hypervisor ran other machines while this one waited, which no process here used; guest
  // time (9th, 10th) is inside user and nice already.
  const busy = fields.slice(0, 7).reduce((sum, value, i) => i === 3 || i === 4 ? sum : sum + value, 0)
  return (busy * 1000) / 100
}

/** `busyMsOfStat` of this machine now, NaN where there is no /proc. */
export function machineBusyMs(): number {
  try {
    return busyMsOfStat(readFileSync('/proc/stat', 'utf8'))
  } catch {
    return NaN
  }
}
