/**
 * The in-memory projection caches, by id (`<session>\0<key>`), indexed by session: following an append
 * touches the caches of that one session, not every cache this process ever held (a host that ran a
 * thousand sessions would otherwise scan thousands of entries on every event). Sessions are kept in
 * the order their caches were last set (least recent first), so the owner can forget the sessions
 * nobody has advanced for longest (`leastRecent`, `forgetSession`).
 */
export class ProjectionMemory<V> {
  private readonly all = new Map<string, V>()
  private readonly bySession = new Map<string, Set<string>>()

  get(id: string): V | undefined {
    return this.all.get(id)
  }

  set(id: string, value: V) {
    this.all.set(id, value)
    const sessionId = sessionOf(id)
    let ids = this.bySession.get(sessionId)
    if (ids) this.bySession.delete(sessionId)
    else ids = new Set()
    // Re-inserted: a Map iterates in insertion order, so the most recently set session comes last.
    this.bySession.set(sessionId, ids)
    ids.add(id)
  }

  /** How many sessions have caches here. */
  get sessions(): number {
    return this.bySession.size
  }

  /** Session ids, least recently set first (a copy). */
  leastRecent(): string[] {
    return [...this.bySession.keys()]
  }

  /** Forget every cache of one session. */
  forgetSession(sessionId: string) {
    for (const id of this.bySession.get(sessionId) ?? []) this.all.delete(id)
    this.bySession.delete(sessionId)
  }

  delete(id: string) {
    if (!this.all.delete(id)) return
    const sessionId = sessionOf(id)
    const ids = this.bySession.get(sessionId)
    ids?.delete(id)
    if (ids && !ids.size) this.bySession.delete(sessionId)
  }

  /** Every id (a copy: safe to delete while iterating). */
  ids(): string[] {
    return [...this.all.keys()]
  }

  /** The ids of one session's caches (a copy: safe to set and delete while iterating). */
  idsOf(sessionId: string): string[] {
    const ids = this.bySession.get(sessionId)
    return ids ? [...ids] : []
  }
}

function sessionOf(id: string) {
  const at = id.indexOf('\u0000')
  return at < 0 ? id : id.slice(0, at)
}
