import { createHash, randomBytes } from 'node:crypto'

/**
 * One-time login links (`/task console`): each link carries a fresh 256-bit ticket, kept only as its
 * sha256 with its target and expiry. Redeeming it deletes it, so a link read from a chat log or a
 * browser history later opens nothing. The clock is passed in (tests).
 */
export class LoginTickets {
  private readonly tickets = new Map<string, { next: string, expiresAt: number }>()

  constructor(private readonly now: () => number = Date.now) {}

  issue(next: string, ttlMs: number): string {
    this.sweep()
    const ticket = randomBytes(32).toString('base64url')
    this.tickets.set(digest(ticket), { next, expiresAt: this.now() + ttlMs })
    return ticket
  }

  /** The target of a valid ticket, which is spent by this call; undefined for an unknown, spent or expired one. */
  redeem(ticket: string): string | undefined {
    const key = digest(ticket)
    const found = this.tickets.get(key)
    this.tickets.delete(key)
    if (!found || found.expiresAt <= this.now()) return
    return found.next
  }

  private sweep() {
    const now = this.now()
    for (const [key, { expiresAt }] of this.tickets) if (expiresAt <= now) this.tickets.delete(key)
  }
}

function digest(ticket: string) {
  return createHash('sha256').update(ticket).digest('hex')
}
