// What the bundled plugins and adapter take from `@taskward/host` at run time, and nothing else: the
// host kernel itself (minato, the SQLite store, koa) never enters the DSH bundle (pack.mjs).
export { KeyedLock } from '../../packages/host/src/keyed-lock.ts'
export { original } from '../../packages/host/src/original.ts'
export { sameOriginTarget } from '../../packages/host/src/connection/redirect.ts'
export { TokenStore } from '../../packages/host/src/connection/tokens.ts'
