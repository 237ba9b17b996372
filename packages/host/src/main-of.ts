import type { Session } from './sessions/session'

/** How far up its parents a session's main session is looked for (a real chain is a few sessions deep). */
const MAX_PARENT_CHAIN = 32

/**
 * The main session `session` works for: itself when it is one, else the first main session up its
 * `parentId` chain, or undefined. A session need not be the main session's own child — a sub-agent a
 * consultation started names the consultation — and the main task's rules (admission, pins, a recorded
 * STOP, budgets) bind it all the same, or a consultation's background child would escape them.
 * A parent that cannot be read ends the search (undefined): callers decide what an unknown parent means.
 */
export async function mainSessionOf(sessions: { get(id: string): Promise<Session> }, session: Session): Promise<Session | undefined> {
  if (session.role === 'main') return session
  const seen = new Set([session.id])
  let parentId = session.parentId
  while (parentId && !seen.has(parentId) && seen.size <= MAX_PARENT_CHAIN) {
    seen.add(parentId)
    const parent = await sessions.get(parentId).catch(() => undefined)
    if (!parent || parent.role === 'main') return parent
    parentId = parent.parentId
  }
  return undefined
}
