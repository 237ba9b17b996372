import type { Context } from 'cordis'
import { sharedStore } from '../store/health'
import { eventStoreOf } from './event-store'
import type { Session } from './session'

/**
 * Bring `session` up to the log's tail as the store holds it: on MySQL/MariaDB other hosts append
 * to the same log, and this process only learns of its own appends, so its `seq` (which every
 * projection read compares against) stays behind theirs. One `max(seq)` on the primary key; the
 * next projection read then folds what the other hosts appended. SQLite has one writer (its lock):
 * nothing to read. For reads that must not show a state the log has moved past (e.g. a click).
 */
export async function catchUpWithStore(ctx: Context, session: Session): Promise<void> {
  if (!sharedStore(ctx)) return
  session.catchUp(await eventStoreOf(ctx).nextSeq(session.id) - 1)
}
