/*
 * The shape of a review page (`review_read_log`), host-neutral: the page's keys, and per entry its
 * type, tool name and keys — never the values (a DSH tool result is the text its agent read, ours the
 * tool's value). The same stage review must give the same shape on our host and inside DSH
 * (plugins/supervisor/tests/supervisor-review-page.spec.ts, tests/dsh/task.spec.ts).
 */

/** What an agent does for one node after the controller's follow-up, as both hosts' tests play it: status before every step. */
export const STAGE_PAGE_SHAPE: readonly string[] = [
  'tool/call task_status {args,callId,name,seq,type}',
  'tool/result task_status {callId,name,result,seq,type}',
  'tool/call task_start_node {args,callId,name,seq,type}',
  'tool/result task_start_node {callId,name,result,seq,type}',
  'tool/call task_status {args,callId,name,seq,type}',
  'tool/result task_status {callId,name,result,seq,type}',
  'tool/call write {args,callId,name,seq,type}',
  'tool/result write {callId,name,result,seq,type}',
  'tool/call task_status {args,callId,name,seq,type}',
  'tool/result task_status {callId,name,result,seq,type}',
  'tool/call task_report_stage {args,callId,name,seq,type}',
]

/** The page's own keys (`next` only while events up to the cutoff remain). */
export const PAGE_KEYS: readonly string[] = ['cutoffSeq', 'events', 'sessionId', 'skipped']

/** One line per entry: `type name {sorted keys}`. */
export function pageShape(page: { events: Record<string, unknown>[] }): string[] {
  return page.events.map((entry) => `${entry.type}${typeof entry.name === 'string' ? ` ${entry.name}` : ''} {${Object.keys(entry).sort().join(',')}}`)
}
