/**
 * Where `/login?next=…` may send a browser: only somewhere on this host. Browsers read a Location
 * more leniently than a glance suggests — `/\evil`, `/<TAB>/evil` and `\\evil` all mean `//evil`
 * (another host) — so the target is resolved the way a browser resolves it (WHATWG URL parsing
 * against our own origin) and accepted only if it lands on our origin. What is returned is the
 * re-serialized path, never the raw input, so no lenient reading remains for the browser to do.
 */
export function sameOriginTarget(next: string | null | undefined, ownOrigin: string): string {
  const fallback = '/'
  if (!next || !next.startsWith('/')) return fallback
  // Backslashes and control characters have no business in a path we hand out; browsers rewrite them.
  if (/[\\\u0000-\u001f\u007f]/.test(next)) return fallback
  let resolved: URL
  try {
    resolved = new URL(next, ownOrigin)
  } catch {
    return fallback
  }
  if (resolved.origin !== new URL(ownOrigin).origin) return fallback
  const target = resolved.pathname + resolved.search + resolved.hash
  // `/.//evil` normalizes to `//evil`, which a browser reads as another host.
  return target.startsWith('//') ? fallback : target
}
