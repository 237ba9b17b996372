// What the bundled plugins and adapter take from `@taskward/host` at run time, and nothing else: the
// host kernel itself (minato, the SQLite store, koa) never enters the DSH bundle (pack.mjs).
export { KeyedLock } from '../../packages/host/src/keyed-lock.ts'
export { original } from '../../packages/host/src/original.ts'
export { mainSessionOf } from '../../packages/host/src/main-of.ts'
export { sameOriginTarget } from '../../packages/host/src/connection/redirect.ts'
export { TokenStore } from '../../packages/host/src/connection/tokens.ts'

// The store-sharing helpers of our kernel (several hosts on one MySQL/MariaDB store: the repair
// plugin's click relay and its catch-up reads). Inside DSH one process owns a session's log and there
// is no `database` service, so there is no other host's tail to read and no lease: the plugins call
// these unconditionally and get "nothing shared" (the relay itself is created only with `database`).
export async function catchUpWithStore() {}
export function storeDriver() { return undefined }
export function sharedStore() { return false }
export async function leaseOf() { return undefined }
export async function revokeLapsedLease() { return false }

// Our kernel's fast path for hot-path emits reads cordis 3's listener table directly. DSH runs cordis
// 4, whose dispatch is its own: inside DSH an emitter is exactly `ctx.emit`.
export function directEmitter(ctx, name) {
  return (...args) => ctx.emit(name, ...args)
}
export function isHeard() { return true }
