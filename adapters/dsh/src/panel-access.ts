import { TaskwardError } from '@taskward/protocol'

/*
 * How the Taskward panel in DSH's own page logs in without a copied token, never weaker than DSH
 * itself (docs/dsh.md, "The panel's clicks"). rc.8's /api trusts a request by its headers — the Host
 * fence (loopback or a configured trusted host: no DNS-rebound page) and the browser's same-origin
 * markers — plus, when the user turns it on, its access gate's cookie (`dsh-host-access-gate`, a
 * web-server guard that runs before every route, Taskward's prefix included). The panel asks
 * `POST <prefix>/panel/grant` once; that request gets the HttpOnly SameSite=Strict `taskward_token`
 * cookie only when it is a browser's same-origin request to a trusted Host:
 *   - no `Sec-Fetch-Site`/`Origin` at all (curl, a script, a link): 401 — anonymous;
 *   - a cross-site or same-site request, an Origin that is not the Host, or a Host that is not ours: 403;
 *   - no `Sec-Fetch-Site` (Chromium sends it only to https and loopback, so a plain-http trusted host
 *     gets none): the Origin must be the Host, as with it.
 * Every change afterwards is still admitted by `admitRouteRequest` (the cookie plus the Origin rule),
 * so a request without the cookie never confirms or declines anything.
 */

export const GRANT_PATH = '/panel/grant'

export interface GrantRequest {
  host?: string | null
  origin?: string | null
  secFetchSite?: string | null
  /** Non-loopback `host[:port]` authorities this DSH is served as (the row's `trustedHosts`). */
  trustedHosts: readonly string[]
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i

function authority(value: string): URL | undefined {
  try {
    return new URL(`http://${value}`)
  } catch {
    return undefined
  }
}

/** Whether an authority names a port (`host:port`, `[v6]:port`), judged after the brackets of an IPv6 literal. */
function hasPort(entry: string): boolean {
  return entry.slice(entry.lastIndexOf(']') + 1).includes(':')
}

/** Whether a Host names this server: a loopback name, or exactly a trusted authority (port-less: any port). */
export function isTrustedHost(host: string | null | undefined, trustedHosts: readonly string[]): boolean {
  const url = host ? authority(host) : undefined
  if (!url || url.username || url.pathname !== '/') return false
  if (LOOPBACK.test(url.hostname)) return true
  return trustedHosts.some((entry) => {
    const trusted = authority(entry)
    if (!trusted) return false
    // An entry with a port (also `[v6]:port`) is that authority exactly; a port-less one any port (DSH's rule).
    return hasPort(entry) ? trusted.host === url.host : trusted.hostname === url.hostname
  })
}

/** The grant decision; throws the refusal (UNAUTHORIZED 401 / FORBIDDEN 403). Pure. */
export function admitPanelGrant(request: GrantRequest): void {
  if (!isTrustedHost(request.host, request.trustedHosts)) {
    throw new TaskwardError('FORBIDDEN', `The Host ${JSON.stringify(request.host ?? '')} is not this DSH's address; add it to the taskward row's trustedHosts if DSH is served under it.`)
  }
  const site = request.secFetchSite?.toLowerCase()
  if (!request.origin && !site) {
    throw new TaskwardError('UNAUTHORIZED', 'Only DSH\'s own page logs in here; elsewhere use the login link (/task console answers one).')
  }
  // Chromium sends Sec-Fetch-Site only to https and loopback origins; on a plain-http trusted host the
  // Origin alone says where the request came from (checked below, as DSH's own fence does).
  if (site !== undefined && site !== 'same-origin') throw new TaskwardError('FORBIDDEN', 'The request did not come from DSH\'s own page (Sec-Fetch-Site is not same-origin).')
  let origin: URL | undefined
  try {
    origin = request.origin ? new URL(request.origin) : undefined
  } catch {}
  if (!origin || origin.host !== authority(request.host!)!.host || !/^https?:$/.test(origin.protocol)) {
    throw new TaskwardError('FORBIDDEN', 'The request\'s Origin is not this DSH\'s own page.')
  }
}
