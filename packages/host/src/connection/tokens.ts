import { TaskwardError, type TokenGrant } from '@taskward/protocol'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export type { TokenGrant }

function digest(token: string) {
  return createHash('sha256').update(token).digest()
}

/**
 * Bearer tokens: one operator token (every session of this host) and any number of session tokens
 * (one session each). 256 random bits each. Session tokens are kept only as their sha256; a presented
 * token is compared by digest in constant time, so timing gives no token away. The operator token is
 * also kept as text, to print the login link once at start.
 */
export class TokenStore {
  private operator: Buffer
  private sessions = new Map<string, { digest: Buffer, sessionId: string }>()

  constructor(operatorToken?: string) {
    // A configured token must be as strong as a generated one would need to be (≥ 128 bits).
    if (operatorToken && !/^[\w-]{22,}$/.test(operatorToken)) {
      throw new TaskwardError('CONFIG_INVALID', 'connection.operatorToken must be at least 22 characters of [A-Za-z0-9_-] '
        + '(128 bits); leave it empty to get a random token at each start.')
    }
    this.operatorToken = operatorToken || TokenStore.generate()
    this.operator = digest(this.operatorToken)
  }

  /** Kept only to print the login link at start; never logged elsewhere. */
  readonly operatorToken: string

  static generate() {
    return randomBytes(32).toString('base64url')
  }

  issueSessionToken(sessionId: string) {
    const token = TokenStore.generate()
    const hashed = digest(token)
    this.sessions.set(hashed.toString('hex'), { digest: hashed, sessionId })
    return token
  }

  revokeSession(sessionId: string) {
    for (const [key, grant] of this.sessions) if (grant.sessionId === sessionId) this.sessions.delete(key)
  }

  verify(token: string | undefined): TokenGrant | undefined {
    if (!token) return
    const presented = digest(token)
    if (timingSafeEqual(presented, this.operator)) return { kind: 'operator' }
    const grant = this.sessions.get(presented.toString('hex'))
    if (grant && timingSafeEqual(presented, grant.digest)) return { kind: 'session', sessionId: grant.sessionId }
  }
}
